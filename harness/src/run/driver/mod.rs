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
//! incarnations), `faults` (firing them), `freeze` (frozen, outlived incarnations), `missing_dir` (a restart on a hidden data dir, §2-4), `workload`
//! (submitting), `settle` (waiting for the outcome), `deadline` (how long an operation may take),
//! `tail` (the harness's own requests once the workload settled, restarted through a kill),
//! `finish` (the record at the end) and `fingerprint` (a crash state, for pruning). None of them
//! imports this file.
//!
//! Imports `model`, `tracer`, `scenario` and the rest of `run` only: a run knows nothing of
//! verdicts or reports.

mod abort;
mod arming;
pub mod deadline;
mod faults;
mod fingerprint;
mod finish;
mod freeze;
mod missing_dir;
mod record;
mod restart;
mod settle;
mod setup;
mod state;
mod tail;
mod workload;

pub use abort::Abort;
pub use fingerprint::Fingerprint;
pub use record::{Happening, Hit, Mark, Refusal, Run, RunOptions};
pub use setup::environment;

use crate::model::crash::Crash;
use crate::run::artifacts::Artifacts;
use crate::run::incarnation::{Launch, Target};
use crate::run::power_loss::PowerLoss;
use crate::scenario::Scenario;
use setup::{Ground, Tracer};
use state::Driver;

/// Runs `scenario` against `target`. Never panics on a misbehaving runtime: whatever happens is
/// in the returned [`Run`] (`aborted`, `unsettled`, …) for the checker to report.
pub async fn run(scenario: &Scenario, target: &Target, options: &RunOptions) -> std::io::Result<Run> {
    let artifacts = Artifacts::create_in(options.artifacts_root.as_deref(), &scenario.name)?;
    let (ground, mut points) = Ground::prepare(&artifacts, scenario, options).await?;

    let mut env = environment(&ground.world, &ground.data, &scenario.runtime);
    if options.probe {
        env.push(("KILLPOINT_PROBE_SOCKET".to_owned(), ground.probe_path.display().to_string()));
    }
    // Traced: the tracer is the command, the runtime its argument; it announces on its own socket.
    // Where the system refuses tracing, a run that only asked for it goes on untraced (the
    // caller said so once); a scenario with syscall faults cannot run at all.
    // A machine crash needs the tracer too: only it sees what the runtime synced.
    let permitted = crate::run::traced::permitted();
    let machine = options.crash == Crash::Machine;
    if let (Err(why), true) = (&permitted, !scenario.syscall_faults.is_empty() || machine) {
        ground.world.shutdown().await;
        let what = if machine { "machine crashes (--crash machine)" } else { "this scenario's [[syscall_fault]]s" };
        return Err(std::io::Error::other(format!("{what} cannot be run here: {why}")));
    }
    let tracing = (options.syscalls || machine || !scenario.syscall_faults.is_empty()) && permitted.is_ok();
    let power_loss = if machine { Some(PowerLoss::new(&ground.data)?) } else { None };
    let (mut tracer, traced_target) = match tracing {
        true => {
            Tracer::start(&artifacts, scenario, &mut env, target, power_loss).map(|(t, target)| (t, Some(target)))?
        }
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

    let clock = &ground.clock;
    let timeline =
        vec![Mark { seq: clock.tick(), at_micros: clock.micros(), happening: Happening::Started { incarnation: 1 } }];
    let first = match restart::start(&launch, 1, &mut tracer.tracing).await {
        Ok(i) => i,
        Err(e) => {
            ground.world.shutdown().await;
            let aborted = Abort::NotReady(e.to_string());
            return Ok(finish::unstarted(scenario, options.crash, timeline, aborted, artifacts));
        }
    };
    let probe = first.probe.is_some();
    let hits = arming::arm_faults(&ground.world, tracer.tracing.as_ref(), scenario, probe);
    let mut driver = Driver::new(scenario, &ground, options, timeline, hits, first, tracer);

    let mut unsettled = Vec::new();
    let (aborted, word) = match workload::drive(&mut driver, &launch, &mut points, &mut unsettled).await {
        Ok(word) => (None, Some(word)),
        Err(reason) => (Some(driver.abort(reason)), None),
    };
    // A run that stopped early may still hold frozen incarnations: none is left behind.
    driver.kill_zombies().await;
    let run = driver.record(artifacts, probe, aborted, unsettled, word).await;
    ground.world.shutdown().await;
    Ok(run)
}
