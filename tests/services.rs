//! `cargo test --test services`: a runtime that is a worker and a server (CONTRACT.md §2,
//! "Services"; issue 31). The server is tests/fixtures/services/kv_server.py, a key-value HTTP
//! server whose state is a file in its own data dir; the worker is kv_worker.py, which registers
//! each incarnation with that server (refused unless every earlier one registered with the same
//! state) and then becomes the reference runtime.
//!
//! - `services::lives_through_every_kill`: after_dispatch and after_provider_success pass with the
//!   probe; the server was started once and served every incarnation (its log: one pid, one
//!   start, every registration); every kill in the trace and the timeline was the worker's alone; and once the run
//!   is dropped nothing is left — no process carrying the run's directory in its environment, no
//!   file in the run's root, no sockets' directory.
//! - `services::never_ready`: a server that never binds its port is named, with what the harness
//!   waited for, and its last line, within its 4 s deadline; the worker never starts.
//! - `services::dies_mid_run`: a server that exits while the run goes on stops the run, said as
//!   the server's exit, with its last words.
//! - `services::restarted_under_the_worker`: `[[service_fault]]`s (kv_restart.toml) crash the
//!   server at a probe's boundary and stop it in order as the provider answers; each time it
//!   comes back on the same port and data dir, the run goes on and passes, the trace and the
//!   timeline say so, the next incarnation registers with the restarted server (which remembers
//!   the earlier ones), and nothing is left.
//! - `services::restarted_at_a_delivery`: a `[[service_fault]]` at `after_delivery_send` fires at
//!   the send to its own `destination` (kv_restart_delivery.toml: `mailer`, sent after `ledger`),
//!   and the run passes.
//! - `services::named_ports`: a service declaring `ports = ["admin", "node"]` (ports_server.py)
//!   is given three distinct ports, binds each, and the worker is told each
//!   (`KILLPOINT_SERVICE_KV_ADMIN_ADDR`, …); taken down and started again, it has the same three.
//! - `services::ports_taken_at_first_start`: a service whose first starts exit saying an address
//!   was in use (a port the harness picked and let go was taken before the service bound it, as
//!   Temporal's dev server's own pick of its HTTP port once took ours) is started again on fresh
//!   ports: two such starts and the third is ready, on ports the first did not have; three, and
//!   the start fails saying it was tried three times.
//! - `services::power_loss`: under `--crash machine` every kill is a power loss of the server too.
//!   after_dispatch passes with kv.toml (the server syncs its state file and its directory): each
//!   kill is followed by the server's power loss and its start again before the worker's, and
//!   the server's log shows it remembered every registration across them. With
//!   kv_no_dir_sync.toml (the rename not made durable, §7-7) the power loss takes the server's
//!   state: the trace says `kv.json` vanished, incarnation 2's registration is refused, and the
//!   run fails `ready`. Needs tracing (ptrace and seccomp): refused, the trial fails saying so.
//! - `services::explored_under_power_loss`: `explore --points syscalls --crash machine` of one
//!   operation beside kv_no_dir_sync.toml finds the lost registration at a system-call point, and
//!   ran no case from a built crash state (a built state holds no service's state: with services
//!   every case re-runs its prefix).
//!
//! - `services::standard_service_scenarios_pass_a_journaling_worker`: the standard scenarios that
//!   need services (`service = "*"`, `needs_services`: a server restart during dispatch, during
//!   reconciliation, during delivery; the worker killed while its server lives; the server frozen;
//!   the server unreachable) pass journal_worker.py, which journals every round in the kv server and
//!   writes a failed journal entry again until the server answers; the trace says each freeze and
//!   cut and its end.
//! - `services::a_blind_worker_is_caught_frozen_and_unreachable`: journal_worker.py `--blind`,
//!   which takes a journal write the server did not answer for the step's failure and runs the step
//!   again afresh, fails service_frozen and service_unreachable on at_most_once and no_blind_retry.
//! - `services::a_freeze_ends_at_its_world_event`: kv_freeze_until.toml freezes the server for at
//!   most 60 s or until `charge` reaches after_result_write: the window ends there, said so, and
//!   the run passes in a few seconds (a window that ignored `until` would outlast the deadline).
//! - `services::a_frozen_worker_woken_after_its_successor`: zombie_worker with the kv server beside
//!   the worker (the server lives while the worker is frozen and its successor takes over):
//!   journal_worker.py passes, exercising §2-12; `--ignore-fence`, which goes on once fenced, fails
//!   `fenced`, naming §2-12.
//! - `services::a_dropping_worker_loses_the_operation` (services/lost.rs): journal_worker.py
//!   `--drop-on-server-error`, which drops a success its server did not take with its operation
//!   (parked), certified on the six standard scenarios that need services: service_frozen and
//!   service_unreachable (among others) fail on `expected_outcome` alone, and the certificate's
//!   JSON blames §2-10 and §4-11 and no other rule; the correct worker, certified on those two,
//!   verifies §2-10.
//! - `services::random_finds_the_dropping_worker` (services/random.rs): `killpoint random` with
//!   kv.toml declared draws service faults too; for each of seeds 1, 2 and 3, 16 cases at most find
//!   `--drop-on-server-error`, the shrunk file holds a `[[service_fault]]`, its command line says
//!   `--services`, and run again it fails `expected_outcome`.
//! - `services::random_passes_the_journaling_worker`: the correct journal worker passes the 16
//!   cases of seed 1.
//! - `services::a_service_fault_needs_the_probe_it_waits_for`: service_frozen without the probe
//!   (its fault at a boundary only the probe announces): not fired, no violation, the scenario
//!   partial — as a worker's fault there — not failed on `faults_reached`.
//!
//! Where python3 is missing the trials are ignored, with the reason on stderr — never passed.

#[path = "services/common.rs"]
mod common;
#[path = "services/journal.rs"]
mod journal;
#[path = "services/lost.rs"]
mod lost;
#[path = "services/random.rs"]
mod random;

use common::{count, fixtures, nothing_left, options, scenario, worker};
use journal::{
    blind_worker_is_caught, freeze_until, frozen_worker_woken, needs_the_probe, standard_pass_a_journaling_worker,
};
use killpoint::model::crash::Crash;
use killpoint::trials::arguments::TestArguments;
use killpoint::{Happening, Run, RunOptions, Scenario, run_scenario};
use libtest_mimic::{Failed, Trial};
use std::process::ExitCode;
use std::time::{Duration, Instant};

fn main() -> ExitCode {
    killpoint::trials::interpreter::python3_first_on_path();
    let args = TestArguments::from_args();
    let python = killpoint::trials::needs::python3_runs();
    if !python {
        eprintln!("python3 not found: the services trials (a Python server beside the worker) are ignored, not passed");
    }
    // The longest first (about 17, 15, 14, 12 and 8 s at 4 at once): trials start in this order,
    // and one started last runs on alone while the other threads have nothing left.
    let trials = vec![
        Trial::test("services::a_blind_worker_is_caught_frozen_and_unreachable", blind_worker_is_caught),
        Trial::test("services::random_passes_the_journaling_worker", random::random_passes_the_journaling_worker),
        Trial::test("services::random_finds_the_dropping_worker", random::random_finds_the_dropping_worker),
        Trial::test("services::a_frozen_worker_woken_after_its_successor", frozen_worker_woken),
        Trial::test("services::standard_service_scenarios_pass_a_journaling_worker", standard_pass_a_journaling_worker),
        Trial::test("services::lives_through_every_kill", lives_through_every_kill),
        Trial::test("services::never_ready", never_ready),
        Trial::test("services::dies_mid_run", dies_mid_run),
        Trial::test("services::restarted_under_the_worker", restarted_under_the_worker),
        Trial::test("services::restarted_at_a_delivery", restarted_at_a_delivery),
        Trial::test("services::named_ports", named_ports),
        Trial::test("services::ports_taken_at_first_start", ports_taken_at_first_start),
        Trial::test("services::power_loss", power_loss),
        Trial::test("services::explored_under_power_loss", explored_under_power_loss),
        Trial::test("services::a_freeze_ends_at_its_world_event", freeze_until),
        Trial::test("services::a_service_fault_needs_the_probe_it_waits_for", needs_the_probe),
        Trial::test("services::a_dropping_worker_loses_the_operation", lost::a_dropping_worker_loses_the_operation),
    ];
    let trials = trials.into_iter().map(|t| t.with_ignored_flag(!python)).collect();
    args.run(trials).exit_code()
}

fn lives_through_every_kill() -> Result<(), Failed> {
    for name in ["after_dispatch", "after_provider_success"] {
        let root = tempfile::tempdir()?;
        let started = Instant::now();
        let (verdict, run) = run_scenario(&scenario(name), &worker(), &options("kv.toml", root.path()))?;
        eprintln!("{name}: {:.1?}", started.elapsed());
        let story = killpoint::report::story::story(&scenario(name), &verdict, &run);
        if !verdict.passed() {
            return Err(format!("{name} must pass with the server beside the worker:\n{story}").into());
        }
        let kills = count(&run, |h| matches!(h, Happening::Killed { .. }));
        let starts = count(&run, |h| matches!(h, Happening::ServiceStarted { .. }));
        let exits = count(&run, |h| matches!(h, Happening::ServiceExited { .. }));
        let stops = count(&run, |h| matches!(h, Happening::ServiceStopped { .. }));
        if kills == 0 || (starts, exits, stops) != (1, 0, 1) {
            return Err(format!("{name}: expected ≥ 1 kill, 1 service start, 0 exits, 1 stop; found {kills}, {starts}, {exits}, {stops}\n{story}").into());
        }
        // The text trace and the timeline (trace.jsonl, the HTML report) say every kill took
        // the worker alone.
        let trace: Vec<String> = killpoint::run::trace::lines(&run).into_iter().map(|l| l.text).collect();
        let timeline: Vec<String> =
            killpoint::report::timeline::Timeline::of(&run).events.into_iter().map(|e| e.text).collect();
        for (what, texts) in [("trace", trace), ("timeline", timeline)] {
            let killed: Vec<&String> = texts.iter().filter(|t| t.contains("SIGKILL incarnation")).collect();
            if killed.len() != kills || !killed.iter().all(|t| t.ends_with("(the worker only: service kv lives on)")) {
                let message = format!("{name}: each of the {kills} kills in the {what} must say the service lived on");
                return Err(format!("{message}: {killed:?}").into());
            }
        }
        served_every_incarnation(name, &run)?;
        nothing_left(run, root.path())?;
    }
    Ok(())
}

/// The server's log: one process started once and registered incarnations 1..=N in order.
fn served_every_incarnation(name: &str, run: &Run) -> Result<(), Failed> {
    let log = std::fs::read_to_string(run.artifacts_path().join("logs").join("service-kv.log"))?;
    let serving: Vec<&str> = log.lines().filter(|l| l.contains(": serving on 127.0.0.1:")).collect();
    let pid = serving.first().and_then(|l| l.split(']').next()).unwrap_or_default().to_owned();
    let registered: Vec<&str> = log.lines().filter(|l| l.contains("registered incarnation")).collect();
    let expected: Vec<String> = (1..=run.incarnations).map(|n| format!("{pid}]: registered incarnation {n}")).collect();
    if serving.len() != 1 || registered != expected {
        return Err(format!("{name}: expected one server start and registrations {expected:?}; the log:\n{log}").into());
    }
    Ok(())
}

fn never_ready() -> Result<(), Failed> {
    let root = tempfile::tempdir()?;
    let started = Instant::now();
    let (verdict, run) =
        run_scenario(&scenario("after_dispatch"), &worker(), &options("kv_never_ready.toml", root.path()))?;
    let took = started.elapsed();
    let reason = run.aborted.as_deref().unwrap_or("(the run did not stop)").to_owned();
    eprintln!("never_ready: {took:.1?}: {reason}");
    let expected = "service `kv` was not ready within 4s: waited for a TCP connection to 127.0.0.1:";
    if !reason.contains(expected) || !reason.contains("told never to be ready") {
        return Err(format!("expected `{expected}` and the server's last line in: {reason}").into());
    }
    // The 4 s deadline, and the harness's own start-up and teardown; a hang is for ever.
    if took > Duration::from_secs(20) || verdict.passed() {
        return Err(format!("took {took:?} (passed: {})", verdict.passed()).into());
    }
    if count(&run, |h| matches!(h, Happening::Started { .. })) != 0 {
        return Err("the worker must not start without its server".into());
    }
    nothing_left(run, root.path())
}

fn dies_mid_run() -> Result<(), Failed> {
    let root = tempfile::tempdir()?;
    let (verdict, run) = run_scenario(&scenario("after_dispatch"), &worker(), &options("kv_dies.toml", root.path()))?;
    let reason = run.aborted.as_deref().unwrap_or("(the run did not stop)").to_owned();
    eprintln!("dies_mid_run: {reason}");
    let expected = "service `kv` exited on its own (exit code 3) while the run went on";
    if !reason.contains(expected) || !reason.contains("exiting on incarnation 2's registration") || verdict.passed() {
        return Err(
            format!("expected `{expected}` with the server's last line, and a failed verdict, in: {reason}").into()
        );
    }
    if count(&run, |h| matches!(h, Happening::ServiceExited { .. })) != 1 {
        return Err("expected the service's exit on the timeline".into());
    }
    nothing_left(run, root.path())
}

fn restarted_under_the_worker() -> Result<(), Failed> {
    let root = tempfile::tempdir()?;
    let scenario = Scenario::load(&fixtures().join("kv_restart.toml")).expect("the fixture's scenario parses");
    let started = Instant::now();
    let (verdict, run) = run_scenario(&scenario, &worker(), &options("kv.toml", root.path()))?;
    eprintln!("restarted_under_the_worker: {:.1?}", started.elapsed());
    let story = killpoint::report::story::story(&scenario, &verdict, &run);
    if !verdict.passed() || run.service_hits != [true, true] {
        return Err(format!("expected a pass with both service faults fired ({:?}):\n{story}", run.service_hits).into());
    }
    let port = run.timeline.iter().find_map(|m| match &m.happening {
        Happening::ServiceStarted { port, .. } => Some(*port),
        _ => None,
    });
    let ports: Vec<u16> = run
        .timeline
        .iter()
        .filter_map(|m| match &m.happening {
            Happening::ServiceRestarted { port, .. } => Some(*port),
            _ => None,
        })
        .collect();
    let killed = count(&run, |h| matches!(h, Happening::ServiceKilled { .. }));
    let exits = count(&run, |h| matches!(h, Happening::ServiceExited { .. }));
    if killed != 2 || exits != 0 || port.is_none() || ports != [port.unwrap_or_default(); 2] {
        return Err(format!(
            "expected 2 service kills, each followed by a start on the first port {port:?}, and no exit of its own; found {killed} kills, restarts on {ports:?}, {exits} exits\n{story}"
        )
        .into());
    }
    let trace: Vec<String> = killpoint::run::trace::lines(&run).into_iter().map(|l| l.text).collect();
    let timeline: Vec<String> =
        killpoint::report::timeline::Timeline::of(&run).events.into_iter().map(|e| e.text).collect();
    for (what, texts) in [("trace", trace), ("timeline", timeline)] {
        for wanted in ["SIGKILL service kv (service fault 1, kill;", "SIGTERM service kv (service fault 2, restart;"] {
            if !texts.iter().any(|t| t.contains(wanted)) {
                return Err(format!("the {what} must say `{wanted}`: {texts:#?}").into());
            }
        }
    }
    restarted_server_remembered(&run)?;
    nothing_left(run, root.path())
}

/// The server's log: three starts (the first and two restarts), and the registrations 1..=N in
/// order across them: the restarted server kept the state of the one before.
fn restarted_server_remembered(run: &Run) -> Result<(), Failed> {
    let log = std::fs::read_to_string(run.artifacts_path().join("logs").join("service-kv.log"))?;
    let serving = log.lines().filter(|l| l.contains(": serving on 127.0.0.1:")).count();
    let registered: Vec<String> =
        log.lines().filter_map(|l| l.split_once("]: registered incarnation ").map(|(_, n)| n.to_owned())).collect();
    let expected: Vec<String> = (1..=run.incarnations).map(|n| n.to_string()).collect();
    if serving != 3 || run.incarnations < 2 || registered != expected {
        return Err(format!("expected three server starts and registrations {expected:?}; the log:\n{log}").into());
    }
    Ok(())
}

fn restarted_at_a_delivery() -> Result<(), Failed> {
    let root = tempfile::tempdir()?;
    let scenario = Scenario::load(&fixtures().join("kv_restart_delivery.toml")).expect("the fixture's scenario parses");
    let (verdict, run) = run_scenario(&scenario, &worker(), &options("kv.toml", root.path()))?;
    let story = killpoint::report::story::story(&scenario, &verdict, &run);
    // The announcement the server went down at is the one marked right after its new start.
    let restarted = run.timeline.iter().position(|m| matches!(m.happening, Happening::ServiceRestarted { .. }));
    let at = restarted.and_then(|i| run.timeline[i + 1..].first()).map(|m| &m.happening);
    let at_mailer = matches!(at, Some(Happening::Boundary { message, .. })
        if message.boundary == killpoint::Boundary::AfterDeliverySend && message.destination.as_deref() == Some("mailer"));
    if !verdict.passed() || run.service_hits != [true] || !at_mailer {
        return Err(format!(
            "expected a pass, with the service fault fired at `charge`'s send to `mailer` (fired: {:?}; the announcement after the restart: {at:?}):\n{story}",
            run.service_hits
        )
        .into());
    }
    nothing_left(run, root.path())
}

fn power_loss() -> Result<(), Failed> {
    let root = tempfile::tempdir()?;
    let machine = |file: &str| RunOptions { crash: Crash::Machine, ..options(file, root.path()) };
    let started = Instant::now();
    let (verdict, run) = run_scenario(&scenario("after_dispatch"), &worker(), &machine("kv.toml"))?;
    eprintln!("power_loss, kv.toml: {:.1?}", started.elapsed());
    let story = killpoint::report::story::story(&scenario("after_dispatch"), &verdict, &run);
    let kills = count(&run, |h| matches!(h, Happening::Killed { .. }));
    let losses = count(&run, |h| matches!(h, Happening::ServicePowerLoss { .. }));
    let back = count(&run, |h| matches!(h, Happening::ServiceRestarted { .. }));
    if !verdict.passed() || kills == 0 || (losses, back) != (kills, kills) {
        return Err(format!("kv.toml under --crash machine: expected a pass, each of the {kills} kills a power loss of kv and its start again; found {losses} power losses, {back} starts again\n{story}").into());
    }
    // The server's log: one start per power loss and the first, and registrations 1..=N in order
    // across them: it kept what it synced.
    let log = std::fs::read_to_string(run.artifacts_path().join("logs").join("service-kv.log"))?;
    let serving = log.lines().filter(|l| l.contains(": serving on 127.0.0.1:")).count();
    let registered: Vec<String> =
        log.lines().filter_map(|l| l.split_once("]: registered incarnation ").map(|(_, n)| n.to_owned())).collect();
    let expected: Vec<String> = (1..=run.incarnations).map(|n| n.to_string()).collect();
    if serving != kills + 1 || registered != expected {
        return Err(
            format!("expected {} server starts and registrations {expected:?}; the log:\n{log}", kills + 1).into()
        );
    }
    nothing_left(run, root.path())?;

    let root = tempfile::tempdir()?;
    let machine = RunOptions { crash: Crash::Machine, ..options("kv_no_dir_sync.toml", root.path()) };
    let (verdict, run) = run_scenario(&scenario("after_dispatch"), &worker(), &machine)?;
    let story = killpoint::report::story::story(&scenario("after_dispatch"), &verdict, &run);
    let unready = verdict.violations.iter().any(|v| v.invariant == killpoint::Invariant::Ready);
    let trace: Vec<String> = killpoint::run::trace::lines(&run).into_iter().map(|l| l.text).collect();
    let vanished =
        trace.iter().any(|t| t.contains("power loss takes service kv too") && t.contains("kv.json: vanished"));
    if verdict.passed() || !unready || !vanished {
        return Err(format!("kv_no_dir_sync.toml under --crash machine: expected `ready` violated (found: {unready}) after the power loss took kv.json (found: {vanished})\n{story}").into());
    }
    nothing_left(run, root.path())
}

/// Starts ports.toml's service, checks what it was given against what the worker is told, takes
/// it down and starts it again, and checks it had the same ports.
fn named_ports() -> Result<(), Failed> {
    use killpoint::run::services::Running;
    use killpoint::scenario::ServiceFaultAction;
    let root = tempfile::tempdir()?;
    let (logs, services) = (root.path().join("logs"), options("ports.toml", root.path()).services);
    std::fs::create_dir_all(&logs)?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        let (mut running, started) = Running::start(&services, root.path(), &logs, None).await;
        started?;
        let before = running.worker_env();
        let down = running.take_down("kv", ServiceFaultAction::Kill).await?;
        running.start_again(&down).await?;
        let after = running.worker_env();
        running.stop().await;
        let given = std::fs::read_to_string(root.path().join("services/kv/ports"))
            .map_err(|e| format!("expected the service to write the ports it was given: {e}"))?;
        let port = |name: &str| before.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()).unwrap_or_default();
        // The named ports are the service's own; its main port the worker reaches through the
        // harness's proxy (which an `unreachable` cuts), so the worker is told the proxy's.
        let named = [port("KILLPOINT_SERVICE_KV_ADMIN_PORT"), port("KILLPOINT_SERVICE_KV_NODE_PORT")].join(" ");
        let main = given.lines().next().and_then(|l| l.split(' ').nth(2)).unwrap_or_default().to_owned();
        let three = format!("{named} {main}");
        let distinct = three.split(' ').collect::<std::collections::BTreeSet<_>>().len() == 3;
        let proxied = port("KILLPOINT_SERVICE_KV_PORT") != main;
        let addr = port("KILLPOINT_SERVICE_KV_ADMIN_ADDR");
        if given != format!("{three}\n{three}\n") || before != after || !distinct || !proxied || !addr.ends_with(&port("KILLPOINT_SERVICE_KV_ADMIN_PORT")) {
            return Err(format!(
                "expected the service given three distinct ports (`{three}`) at both starts, the worker told its named ones and a proxy's for its own, the same before and after; found it given:\n{given}\nthe worker told {before:?}, then {after:?}"
            ));
        }
        Ok::<(), String>(())
    })?;
    Ok(())
}

fn ports_taken_at_first_start() -> Result<(), Failed> {
    use killpoint::run::services::Running;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    for (file, ready) in [("ports_taken_2.toml", true), ("ports_taken_3.toml", false)] {
        let root = tempfile::tempdir()?;
        let (logs, services) = (root.path().join("logs"), options(file, root.path()).services);
        std::fs::create_dir_all(&logs)?;
        let started = runtime.block_on(async {
            let (mut running, started) = Running::start(&services, root.path(), &logs, None).await;
            running.stop().await;
            started
        });
        let starts = std::fs::read_to_string(root.path().join("services/kv/starts")).unwrap_or_default();
        let ports: Vec<&str> = starts.lines().collect();
        let fresh = ports.len() == 3 && ports[0] != ports[2];
        let said = match &started {
            Ok(_) => ready,
            Err(e) => !ready && e.to_string().contains("started 3 times, each on fresh ports"),
        };
        if !fresh || !said {
            let outcome = started.map(|_| "ready").map_err(|e| e.to_string());
            return Err(format!(
                "{file}: expected three starts, the last on a port the first did not have, and {}; found starts on ports {ports:?} and {outcome:?}",
                if ready { "the service ready" } else { "the start refused, saying it was tried 3 times" }
            )
            .into());
        }
    }
    Ok(())
}

fn explored_under_power_loss() -> Result<(), Failed> {
    use killpoint::search::explore::{ExploreOptions, Points, explore};
    let root = tempfile::tempdir()?;
    let mut one = scenario("after_dispatch");
    one.operations.retain(|op| op.id == "charge");
    one.faults.clear();
    let run = RunOptions { crash: Crash::Machine, ..options("kv_no_dir_sync.toml", root.path()) };
    let options = ExploreOptions {
        points: Points::Syscalls,
        first_failure: true,
        keep_failures: false,
        run,
        ..ExploreOptions::default()
    };
    let started = Instant::now();
    let exploration = explore(&one, &worker(), &options, &|_, _, _, _| {})?;
    eprintln!("explored_under_power_loss: {} case(s) in {:.1?}", exploration.cases_run(), started.elapsed());
    let found = exploration
        .failures
        .iter()
        .any(|f| f.verdict.violations.iter().any(|v| v.invariant == killpoint::Invariant::Ready));
    if !found || exploration.from_built != 0 {
        return Err(format!(
            "expected a case failing `ready` (found: {found}) and none run from a built state (found {})",
            exploration.from_built
        )
        .into());
    }
    let files: Vec<_> = std::fs::read_dir(root.path())?.flatten().map(|e| e.path()).collect();
    match files.is_empty() {
        true => Ok(()),
        false => Err(format!("left in the runs' root: {files:?}").into()),
    }
}
