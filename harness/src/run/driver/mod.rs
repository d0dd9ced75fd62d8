//! The driver: runs one scenario against one runtime and collects the evidence.
//!
//! It starts a fake world and the runtime, submits the workload one operation at a time, answers
//! the probe, fires each fault at its boundary occurrence (revoke, SIGKILL, restart on the same
//! data dir), and waits for every operation to settle. It never sleeps to synchronise: every wait
//! is on an event (a probe line, a held answer, the process's exit, an operation's state) with a
//! deadline that says what it was waiting for. The one poll is reading an operation's state,
//! which the contract offers no event for.
//!
//! Its parts: `record` (what a run leaves), `abort` (why one stopped early), `setup` (the ground before the first start), `arming`
//! (where each fault fires), `state` (what the steps share), `restart` (starting and restarting
//! incarnations), `faults` (firing them), `freeze` (frozen, outlived incarnations), `missing_dir` (a restart on a hidden data dir, §2-4), `rebuild` and `host` (a restore: the
//! backup in a new host's data dir, its signal, the clients' resubmissions), `services` (the processes beside the
//! worker, started before it and stopped after it), `service_faults`, `service_windows` and `windows` (what
//! a scenario does to them), `workload`
//! (submitting), `settle` (waiting for the outcome), `deadline` (how long an operation may take),
//! `tail` (the harness's own requests once the workload settled, restarted through a kill),
//! `finish` (the record at the end), `fingerprint` (a crash state, for pruning) and `resume` (a run
//! that goes on from a crash state built at a point, `crate::run::built`). None of them
//! imports this file.
//!
//! Imports `model`, `tracer`, `scenario` and the rest of `run` only: a run knows nothing of
//! verdicts or reports.

mod abort;
mod arming;
pub mod deadline;
mod evidence;
mod faults;
mod fingerprint;
mod finish;
mod freeze;
mod host;
mod missing_dir;
mod options;
mod rebuild;
pub mod record;
mod restart;
mod resume;
mod service_faults;
mod service_windows;
mod services;
mod settle;
mod setup;
mod state;
mod tail;
mod windows;
mod workload;

pub use abort::Abort;
pub use evidence::Run;
pub use fingerprint::Fingerprint;
pub use host::RESTORED_VARIABLE;
pub use options::RunOptions;
pub use record::{Happening, Hit, Mark, Refusal, Release};
pub use setup::environment;

use crate::model::crash::Crash;
use crate::run::artifacts::Artifacts;
use crate::run::built::{BuiltState, BuiltStates};
use crate::run::incarnation::{Launch, Target};
use crate::run::power_loss::PowerLoss;
use crate::scenario::Scenario;
use setup::{Ground, Tracer};
use state::Driver;

/// Runs `scenario` against `target`. Never panics on a misbehaving runtime: whatever happens is
/// in the returned [`Run`] (`aborted`, `unsettled`, …) for the checker to report.
pub async fn run(scenario: &Scenario, target: &Target, options: &RunOptions) -> std::io::Result<Run> {
    Ok(play(scenario, target, options, Start { from: None, recording: None }).await?.0)
}

/// Which crash states a traced run builds: at each explored point (`PointKind::explored`) of
/// incarnation `incarnation` (1 in a record run; the recovery, 2, in a depth-1 case's run, for
/// depth 2).
#[derive(Clone, Copy)]
pub struct Recording {
    pub incarnation: u32,
}

/// Runs `scenario` traced from the start, and builds the crash states `recording` says
/// (`crate::run::built`); `None` when this machine cannot trace (then nothing is built).
pub async fn record_states(
    scenario: &Scenario,
    target: &Target,
    options: &RunOptions,
    recording: Recording,
) -> std::io::Result<(Run, Option<BuiltStates>)> {
    let options = RunOptions { syscalls: true, ..options.clone() };
    play(scenario, target, &options, Start { from: None, recording: Some(recording) }).await
}

/// Runs `scenario` from a crash state built at the point its last `[[syscall_fault]]` names: the
/// world from the snapshot, the recovery (the next incarnation) on a copy of the data dir, then
/// the rest of the workload, building the crash states `recording` says on the way (the recovery
/// runs under the tracer only then). The [`Run`] is the whole run's, as if its prefix had been
/// played.
pub async fn run_built(
    scenario: &Scenario,
    target: &Target,
    options: &RunOptions,
    state: &BuiltState,
    recording: Option<Recording>,
) -> std::io::Result<(Run, Option<BuiltStates>)> {
    play(scenario, target, options, Start { from: Some(state), recording }).await
}

/// How a run begins: afresh or from a built crash state, building crash states or not.
#[derive(Clone, Copy)]
struct Start<'s> {
    from: Option<&'s BuiltState>,
    recording: Option<Recording>,
}

async fn play(
    scenario: &Scenario,
    target: &Target,
    options: &RunOptions,
    start: Start<'_>,
) -> std::io::Result<(Run, Option<BuiltStates>)> {
    if !options.contract.has_tasks() && scenario.operations.iter().any(|op| op.task) {
        let why = format!(
            "`{}` has task operations (CONTRACT.md section 12), which `{}` does not have: it is not run under that version",
            scenario.name, options.contract
        );
        return Err(std::io::Error::other(why));
    }
    // In memory unless asked otherwise (`crate::run::ram`).
    let root = options.artifacts_root.as_deref().or(crate::run::ram::root());
    let artifacts = Artifacts::create_in(root, &scenario.name)?;
    let (ground, mut points) = match start.from {
        Some(state) => Ground::resume(&artifacts, state, options).await?,
        None => Ground::prepare(&artifacts, scenario, options).await?,
    };

    // A built state holds the worker's data dir and the world, not a service's state: a run from
    // one with services would recover against a server that never saw the prefix.
    if start.from.is_some() && !options.services.is_empty() {
        ground.world.shutdown().await;
        let why = "a run from a built crash state cannot have services (their state is not in it): explore re-runs each case's prefix";
        return Err(std::io::Error::other(why));
    }
    if let Some(why) = service_faults::undeclared(scenario, &options.services) {
        ground.world.shutdown().await;
        return Err(std::io::Error::other(why));
    }
    // Traced: the tracer is the command, the runtime its argument; it announces on its own socket.
    // Where the system refuses tracing, a run that only asked for it goes on untraced (the
    // caller said so once); a scenario with syscall faults cannot run at all.
    // A machine crash needs the tracer too: only it sees what the runtime synced.
    let permitted = crate::run::traced::permitted();
    let machine = options.crash.traced();
    if options.crash == Crash::Restore && !options.services.is_empty() {
        ground.world.shutdown().await;
        let why = "restores (--crash restore) cannot be run with services yet: a server's backup is not modelled";
        return Err(std::io::Error::other(why));
    }
    let needs_tracer = !scenario.syscall_faults.is_empty() || scenario.schedule.is_some() || machine;
    if let (Err(why), true) = (&permitted, needs_tracer) {
        ground.world.shutdown().await;
        let what = match (options.crash, scenario.schedule.is_some()) {
            (Crash::Restore, _) => "restores (--crash restore)",
            (Crash::Machine, _) => "machine crashes (--crash machine)",
            (Crash::Process, true) => "this scenario's controlled schedule",
            (Crash::Process, false) => "this scenario's [[syscall_fault]]s",
        };
        return Err(std::io::Error::other(format!("{what} cannot be run here: {why}")));
    }
    // A power loss takes the services too: each runs under the tracer (checked just above).
    let powered = (options.crash == Crash::Machine).then(|| setup::machine(&artifacts));
    let (services, service_starts) = match services::start(&options.services, &artifacts, &ground, powered).await {
        Ok(started) => started,
        Err((timeline, why)) => {
            ground.world.shutdown().await;
            let aborted = Abort::NotReady(why);
            return Ok((finish::unstarted(scenario, options.crash, timeline, aborted, artifacts), None));
        }
    };
    let mut env = environment(&ground.world, &ground.data, &scenario.runtime);
    setup::declare(&mut env, options.contract);
    env.extend(services.worker_env());
    if options.probe {
        env.push(("KILLPOINT_PROBE_SOCKET".to_owned(), ground.probe_path.display().to_string()));
    }
    // From a built state every kill has happened: the recovery is traced only when its points
    // are wanted (depth 2 builds their states) or it runs under the scenario's controlled
    // schedule, as the run it was kept from did, and otherwise runs as fast as the runtime does
    // (a traced Python recovery took 1.4 times as long).
    let wanted = match start.from {
        Some(_) => start.recording.is_some() || scenario.schedule.is_some(),
        // Keeping the state a kill leaves needs the tracer (`after_kill`), with the probe too.
        None => {
            options.syscalls
                || machine
                || options.keep_kills
                || !scenario.syscall_faults.is_empty()
                || scenario.schedule.is_some()
        }
    };
    let tracing = wanted && permitted.is_ok();
    // From a built state the data dir is already what the crash left (a power loss's, in machine
    // mode): it is the new baseline, as after a re-run's restore.
    let power_loss = match (machine && tracing, options.crash) {
        (true, Crash::Restore) => Some(PowerLoss::new(&ground.data)?.keeping_backups()),
        (true, _) => Some(PowerLoss::new(&ground.data)?),
        (false, _) => None,
    };
    let resumed = start.from;
    // Nothing of the recovery is wanted when no state is built from it and no schedule runs it.
    let untraced_target = (options.untraced_after_last_kill
        && tracing
        && options.crash == Crash::Process
        && start.recording.is_none()
        && scenario.schedule.is_none())
    .then(|| target.clone());
    let (mut tracer, traced_target) = match tracing {
        true => Tracer::start(&artifacts, scenario, &mut env, target, power_loss, resumed)
            .map(|(t, target)| (t, Some(target)))?,
        false => (Tracer::none(), None),
    };
    let target = traced_target.as_ref().unwrap_or(target);
    let launch = Launch {
        target,
        env,
        logs: &ground.logs,
        probe: ground.listener.as_ref(),
        ready_timeout: options.ready_timeout,
    };
    let mut opening = resume::Opening::new(&ground, start.from, service_starts);
    let capture = match (start.recording, &tracer.tracing) {
        (Some(recording), Some(tracing)) => Some(opening.capture(&ground, tracing, recording)?),
        _ => None,
    };

    let first = match restart::start(&launch, opening.number, &mut tracer.tracing).await {
        Ok(i) => i,
        Err(e) => {
            let (timeline, aborted) = services::stopped(services, opening.timeline, &ground, e.to_string()).await;
            ground.world.shutdown().await;
            return Ok((finish::unstarted(scenario, options.crash, timeline, aborted, artifacts), None));
        }
    };
    let probe = first.probe.is_some();
    let mut hits = match start.from {
        Some(state) => arming::arm_unfired(&ground.world, scenario, probe, tracer.tracing.is_some(), &state.fired),
        None => {
            service_faults::arm(&ground.world, scenario);
            arming::arm_faults(&ground.world, tracer.tracing.as_ref(), scenario, probe)
        }
    };
    let fired = start.from.map_or(&[][..], |state| &state.fired);
    for f in fired {
        if let Some(hit) = hits.get_mut(f.fault) {
            *hit = f.hit;
        }
    }
    let mut driver = Driver::new(scenario, &ground, options, opening.timeline, hits, first, tracer);
    for f in fired {
        if let Some(killed) = driver.killed.get_mut(f.fault) {
            *killed = Some(f.at);
        }
    }
    driver.mirror = opening.mirror.take();
    driver.untraced_target = untraced_target;
    driver.services = services;
    driver.tell_capture_the_api();
    if opening.number > 1 {
        driver.recovering(opening.killed_at).await;
    }

    let mut unsettled = Vec::new();
    let (aborted, word) = match workload::drive(&mut driver, &launch, &mut points, &mut unsettled).await {
        Ok(word) => (None, Some(word)),
        Err(reason) => (Some(driver.abort(reason)), None),
    };
    // A run that stopped early may still hold frozen incarnations: none is left behind.
    driver.kill_zombies().await;
    let mut run = driver.record(artifacts, probe, aborted, unsettled, word).await;
    if let (Some(state), false) = (start.from, tracing) {
        // Untraced: the kills at the built state's point and before it were hit, in its run.
        run.syscall_hits = setup::hit_up_to(&scenario.syscall_faults, state);
    }
    ground.world.shutdown().await;
    let built = capture.map(|c| c.finish(&run.hits, &run.killed)).transpose()?;
    Ok((run, built))
}
