//! What a run sets up before its first incarnation starts: the run directory's data dir, logs and
//! probe socket, the fake world with the faults it injects from the first request on, the
//! contract's environment, and the tracer when the run traces.

use super::options::RunOptions;
use crate::run::artifacts::Artifacts;
use crate::run::built::BuiltState;
use crate::run::incarnation::Target;
use crate::run::power_loss::PowerLoss;
use crate::run::traced::{Reached, Tracing};
use crate::scenario::{RuntimeSettings, Scenario, SyscallFault};
use fake_tool::{Clock, ConsumerFault, KillPoint, LookupFault, ModelFault, ModelScript, PolicyFault, World};
use std::path::{Path, PathBuf};
use tokio::net::UnixListener;
use tokio::sync::mpsc::UnboundedReceiver;

/// The ground a run stands on: its directories and probe socket, its clock and its world.
pub(super) struct Ground {
    pub(super) data: PathBuf,
    pub(super) logs: PathBuf,
    pub(super) probe_path: PathBuf,
    pub(super) listener: Option<UnixListener>,
    pub(super) clock: Clock,
    pub(super) world: World,
}

impl Ground {
    /// Makes the data dir and logs under `artifacts`, binds the probe socket (with the probe), and
    /// starts the world with the scenario's consumer, lookup and policy faults armed; also returns
    /// the world's word of each armed kill point reached.
    pub(super) async fn prepare(
        artifacts: &Artifacts,
        scenario: &Scenario,
        options: &RunOptions,
    ) -> std::io::Result<(Ground, UnboundedReceiver<KillPoint>)> {
        let data = artifacts.path().join("data");
        let logs = artifacts.path().join("logs");
        std::fs::create_dir(&data)?;
        std::fs::create_dir(&logs)?;
        let (probe_path, listener) = probe_socket(artifacts, options.probe)?;

        let clock = Clock::default();
        let (world, points) = World::start(clock.clone()).await?;
        arm_world(&world, scenario);
        Ok((Ground { data, logs, probe_path, listener, clock, world }, points))
    }
}

impl Ground {
    /// The ground of a run that goes on from a crash state built at a point: the data dir written
    /// from its image, the logs as they were, the world started from its snapshot (its faults
    /// armed as they were left), on a clock that goes on from the snapshot's.
    pub(super) async fn resume(
        artifacts: &Artifacts,
        state: &BuiltState,
        options: &RunOptions,
    ) -> std::io::Result<(Ground, UnboundedReceiver<KillPoint>)> {
        let data = artifacts.path().join("data");
        let logs = artifacts.path().join("logs");
        state.disk.write_to(&data)?;
        std::fs::create_dir(&logs)?;
        for (name, bytes) in &state.logs {
            std::fs::write(logs.join(name), bytes)?;
        }
        let (probe_path, listener) = probe_socket(artifacts, options.probe)?;
        let clock = state.world.clock();
        let (world, points) = World::start_from(&state.world, clock.clone()).await?;
        Ok((Ground { data, logs, probe_path, listener, clock, world }, points))
    }
}

/// The probe socket's path under `artifacts`, bound when the run has the probe.
fn probe_socket(artifacts: &Artifacts, probe: bool) -> std::io::Result<(PathBuf, Option<UnixListener>)> {
    let path = artifacts.socket("probe.sock");
    let listener = match probe {
        true => Some(tokio::net::UnixListener::bind(&path).map_err(|e| named(&path, e))?),
        false => None,
    };
    Ok((path, listener))
}

/// A socket that cannot be bound, said with its path (the OS's message does not name it).
fn named(socket: &Path, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("cannot listen on the Unix socket {}: {e}", socket.display()))
}

/// The faults the world injects on its own, whatever the runtime does first.
fn arm_world(world: &World, scenario: &Scenario) {
    // What the model decides for each task: the tool the scenario names, with values drawn from
    // a seed that is the same in every run, so a written case replays the same answers.
    for op in scenario.operations.iter().filter(|op| op.task) {
        world.arm_model(ModelScript { operation: op.id.clone(), tool: op.tool.tool_name().to_owned(), seed: 0 });
    }
    for c in &scenario.consumer_faults {
        world.arm_consumer(ConsumerFault {
            destination: c.destination.clone(),
            operations: c.scope(&scenario.operations),
            times: c.times,
            apply: c.apply,
            status: c.status,
        });
    }
    // Armed before the runtime starts: it may ask the policy service or look up at once.
    for m in &scenario.model_faults {
        world.arm_model_fault(ModelFault { operation: m.operation.clone(), times: m.times, response: m.response });
    }
    for l in &scenario.lookup_faults {
        world.arm_lookup(LookupFault { operation: l.operation.clone(), times: l.times, response: l.response });
    }
    for p in &scenario.policy_faults {
        world.arm_policy(PolicyFault {
            times: p.times,
            operation: p.operation.clone(),
            subject: p.subject,
            response: p.response,
        });
    }
}

/// The contract's environment for a runtime in `world` keeping its state in `data`
/// (CONTRACT.md section 2), without the probe socket and the per-incarnation variables.
pub fn environment(world: &World, data: &Path, settings: &RuntimeSettings) -> Vec<(String, String)> {
    [
        ("KILLPOINT_CONTRACT", crate::run::incarnation::CONTRACT.to_owned()),
        ("KILLPOINT_DATA_DIR", data.display().to_string()),
        ("KILLPOINT_LISTEN", "127.0.0.1:0".to_owned()),
        ("KILLPOINT_PROVIDER_URL", world.provider_url()),
        ("KILLPOINT_CONSUMERS_URL", world.consumers_url()),
        ("KILLPOINT_POLICY_URL", world.policy_url()),
        ("KILLPOINT_MODEL_URL", world.model_url()),
        ("KILLPOINT_DELIVERY_MAX_ATTEMPTS", settings.delivery_max_attempts.to_string()),
        ("KILLPOINT_RETRY_BASE_MS", settings.retry_base_ms.to_string()),
    ]
    .into_iter()
    .map(|(name, value)| (name.to_owned(), value))
    .collect()
}

/// Gives the runtime `version` (`--contract`) instead of the current one [`environment`] names.
pub(super) fn declare(env: &mut [(String, String)], version: crate::model::contract::Version) {
    for (_, value) in env.iter_mut().filter(|(name, _)| name == "KILLPOINT_CONTRACT") {
        *value = version.name().to_owned();
    }
}

/// With tracing: the tracer's link, and word of a syscall fault's point being reached.
pub(super) struct Tracer {
    pub(super) tracing: Option<Tracing>,
    pub(super) reached: Option<UnboundedReceiver<Reached>>,
}

impl Tracer {
    /// A run that does not trace.
    pub(super) fn none() -> Tracer {
        Tracer { tracing: None, reached: None }
    }

    /// The tracer of a traced run (going on from a built state's tracing, when `resumed`): its socket in the run's sockets' directory (named in `env`), and the target
    /// that runs the runtime under it — the tracer the command, the runtime its argument.
    pub(super) fn start(
        artifacts: &Artifacts,
        scenario: &Scenario,
        env: &mut Vec<(String, String)>,
        target: &Target,
        power_loss: Option<PowerLoss>,
        resumed: Option<&BuiltState>,
    ) -> std::io::Result<(Tracer, Target)> {
        let tracer = crate::run::traced::tracer_binary().expect("permitted() found it");
        let socket = artifacts.socket("trace.sock");
        let faults = scenario.syscall_faults.clone();
        // A controlled schedule: the tracer reads it from its environment, the harness takes
        // its turns (`run::traced::turn`).
        let turn = scenario.schedule.map(|schedule| {
            env.push((crate::tracer::Schedule::VARIABLE.to_owned(), schedule.to_variable()));
            std::sync::Arc::new(crate::run::traced::Turn::default())
        });
        let (traced, reached) = match resumed {
            Some(state) => {
                let hit = hit_up_to(&faults, state);
                Tracing::resumed(&socket, faults, hit, state.trace.clone(), power_loss, turn)
            }
            None => Tracing::scheduled(&socket, faults, power_loss, turn),
        }
        .map_err(|e| named(&socket, e))?;
        env.push((crate::run::traced::SOCKET_VARIABLE.to_owned(), socket.display().to_string()));
        // Every incarnation's tracer appends what the runtime did outside its data dir and the
        // world to one file of the run, which the judge reads (`sandboxed`).
        let escapes = artifacts.path().join(crate::run::traced::ESCAPES_FILE);
        env.push((crate::tracer::ESCAPES_VARIABLE.to_owned(), escapes.display().to_string()));
        let mut args = vec!["--".to_owned(), target.program.display().to_string()];
        args.extend(target.args.iter().cloned());
        Ok((Tracer { tracing: Some(traced), reached: Some(reached) }, Target { program: tracer, args }))
    }
}

/// Machine-crash mode's services: under the tracer, their sockets beside the worker's.
pub(super) fn machine(artifacts: &Artifacts) -> crate::run::services::Machine {
    let tracer = crate::run::traced::tracer_binary().expect("permitted() found it");
    let sockets = artifacts.socket("trace.sock").parent().map(Path::to_owned).unwrap_or_default();
    crate::run::services::Machine { tracer, sockets }
}

/// Which of `faults` a run going on from `state` has hit: the one at the built state's point, and
/// those before it (a depth-2 case's first) in the run it was built in.
pub(super) fn hit_up_to(faults: &[SyscallFault], state: &BuiltState) -> Vec<bool> {
    let point = match &state.at {
        crate::run::built::At::Point(point) => point,
        crate::run::built::At::Killed { syscall_hits, .. } => return syscall_hits.clone(),
    };
    let at = faults.iter().position(|f| *f == point.fault());
    (0..faults.len()).map(|i| at.is_some_and(|at| i <= at)).collect()
}
