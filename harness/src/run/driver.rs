//! The driver: runs one scenario against one runtime and collects the evidence.
//!
//! It starts a fake world and the runtime, submits the workload one operation at a time, answers
//! the probe, fires each fault at its boundary occurrence (revoke, SIGKILL, restart on the same
//! data dir), and waits for every operation to settle. It never sleeps to synchronise: every wait
//! is on an event (a probe line, a held answer, the process's exit, an operation's state) with a
//! deadline that says what it was waiting for. The one poll is reading an operation's state,
//! which the contract offers no event for.

use crate::model::boundary::{Boundary, Site};
use crate::run::artifacts::Artifacts;
use crate::run::client::{Answer, Client, OperationReport, ReadError, Resubmission};
use crate::run::incarnation::{Incarnation, Launch, Target, describe_status, tail_of_logs};
use crate::run::probe::ProbeMessage;
use crate::scenario::{Action, Anchor, Operation, Revoke, RuntimeSettings, Scenario};
use fake_tool::{
    Clock, ConsumerFault, ConsumerHold, Entry, FaultResponse, LookupFault, PolicyFault, ProviderFault, Revocation,
    Subject, World,
};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Something the harness did or saw, on the same clock as the fake world's ledger.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Happening {
    Started {
        incarnation: u32,
    },
    Submitted {
        operation: String,
    },
    /// The runtime accepted a submission (`202`, or `200` for one it already had).
    Answered {
        operation: String,
        status: u16,
    },
    /// A submission that tests the contract's submission rules, and what came back: after every
    /// restart, each submitted operation again (`operation` names it); once per run, malformed
    /// ones (`operation` is absent; `read_after` is the read of the id they name, which must not
    /// exist).
    Resubmitted {
        operation: Option<String>,
        incarnation: u32,
        submission: Resubmission,
        answer: Answer,
        read_after: Option<Answer>,
    },
    /// The runtime answered `404` for an operation it had accepted.
    Forgotten {
        operation: String,
        incarnation: u32,
        answer: String,
    },
    /// The runtime announced a boundary on the probe; `killed` when a fault fired there.
    Boundary {
        message: ProbeMessage,
        killed: bool,
    },
    /// The fake world reached an armed kill point (e.g. the provider holds its answer for
    /// `after_dispatch`) and the harness killed the runtime.
    KillPoint {
        operation: String,
        what: String,
    },
    /// The tracer stopped the runtime at the system call a `[[syscall_fault]]` names, and the
    /// harness killed it there.
    SyscallKill {
        incarnation: u32,
        point: crate::run::traced::SyscallPoint,
    },
    Killed {
        incarnation: u32,
    },
    /// The runtime exited without being killed.
    Exited {
        incarnation: u32,
        status: String,
    },
    /// A `freeze` fault: the runtime announced `message` and was SIGSTOPped instead of answered;
    /// the next incarnation starts on the same data dir while this one still exists.
    Frozen {
        incarnation: u32,
        message: ProbeMessage,
    },
    /// The frozen incarnation was SIGCONTed and its held announcement answered `resume`. Marked
    /// before the signal: anything it does afterwards comes later on the clock.
    Resumed {
        incarnation: u32,
        message: ProbeMessage,
    },
    /// A resumed (outlived) incarnation announced a boundary; the harness answered `resume`.
    ZombieAnnounced {
        incarnation: u32,
        message: ProbeMessage,
    },
    /// The resumed incarnation exited, as a fenced one must.
    ZombieExited {
        incarnation: u32,
        status: String,
    },
    /// The resumed incarnation was still running at the deadline; the harness SIGKILLed it.
    ZombieOutlived {
        incarnation: u32,
        waited: Duration,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Mark {
    pub seq: u64,
    /// When it happened: microseconds since the scenario's world started, on the same origin as
    /// the ledger's `at_micros` (the HTML timeline draws both on one axis; the text trace and its
    /// snapshots never show it).
    pub at_micros: u64,
    #[serde(flatten)]
    pub happening: Happening,
}

/// How a fault's boundary was reached (or not). The report shows it for every fault: a boundary
/// the run did not exercise is never reported as passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Hit {
    /// Killed exactly at the boundary: announced on the probe, or a held provider/consumer answer.
    Exact,
    /// Killed exactly at the boundary without the probe, at the system call that is its edge
    /// (`killpoint-tracer`; CONTRACT.md section 7, "Boundaries at system calls").
    AtSyscall,
    /// Killed as soon as the fake world saw the point from outside; the runtime may have moved on
    /// a little (`after_provider_success` without the probe).
    Approximate,
    /// The fault could be armed but the runtime never got there.
    NotReached,
    /// Only the probe can stop a runtime here, and this runtime does not implement it.
    NeedsProbe,
}

/// Options that are not part of the scenario.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Give the runtime a probe socket (`KILLPOINT_PROBE_SOCKET`).
    pub probe: bool,
    /// How long the runtime has to become ready after each start.
    pub ready_timeout: Duration,
    /// Where run directories are created; `None`: the system's temp dir.
    pub artifacts_root: Option<PathBuf>,
    /// Run every incarnation under `killpoint-tracer` and record its system-call crash points
    /// (`Run::syscall_points`); on anyway when the scenario has `[[syscall_fault]]`s.
    pub syscalls: bool,
    /// Once the workload settled, send the malformed submissions the contract says to refuse
    /// (`idempotent_submission`). `killpoint explore` checks them in its record run only: they
    /// concern the API, not the crash point.
    pub malformed_submissions: bool,
    /// At every probe announcement (the runtime blocked there), take a [`Fingerprint`] of the
    /// crash state a kill would leave; `killpoint explore` prunes crash points with it.
    pub fingerprints: bool,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            probe: true,
            ready_timeout: Duration::from_secs(10),
            artifacts_root: None,
            fingerprints: false,
            malformed_submissions: true,
            syscalls: false,
        }
    }
}

/// What a run produced: the evidence the checker judges.
#[derive(Debug)]
pub struct Run {
    pub ledger: Vec<Entry>,
    pub timeline: Vec<Mark>,
    /// The runtime's final report of each operation (absent if it could not be read).
    pub reports: BTreeMap<String, OperationReport>,
    /// Operations that did not settle in time, with the last state seen.
    pub unsettled: Vec<(String, String)>,
    /// Whether the runtime implemented the probe (declared it and connected).
    pub probe: bool,
    /// How each fault of the scenario was reached, by index into `scenario.faults`.
    pub hits: Vec<Hit>,
    /// Why the run stopped early, if it did (the runtime could not start, exited on its own…).
    pub aborted: Option<String>,
    /// The harness itself failed (its run directory vanished, …): the evidence is incomplete and
    /// nothing in it is held against the runtime.
    pub harness_failure: Option<String>,
    pub incarnations: u32,
    /// Kill → the next incarnation ready, one per kill.
    pub restarts: Vec<Duration>,
    /// Kill → restarted → the operation being waited for settled, one per settle after a kill.
    pub recoveries: Vec<Duration>,
    /// With [`RunOptions::fingerprints`]: the crash state at each announcement, by the `seq` of
    /// its [`Happening::Boundary`] mark.
    pub fingerprints: Vec<(u64, Fingerprint)>,
    /// With tracing: every system-call crash point passed after each incarnation's ready line.
    pub syscall_points: Vec<crate::run::traced::SyscallPoint>,
    /// Whether each `[[syscall_fault]]` was reached, by index.
    pub syscall_hits: Vec<bool>,
    /// `GET /metrics` of the last incarnation once the workload settled, for a runtime whose
    /// ready line declared `"metrics": true` (`None`: it does not serve them, or the run stopped
    /// early); `Err` says why it could not be read.
    pub metrics: Option<Result<String, String>>,
    pub artifacts: Artifacts,
}

/// What a SIGKILL would leave behind at one instant: the bytes of every file under the data dir
/// and the fake world's state. Two instants with the same fingerprint are the same crash state:
/// the next incarnation starts from the same disk and the same world.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint {
    pub data: u64,
    /// Entries of the world's ledger that change what the world will answer: provider calls,
    /// consumer receipts, revocations — and lookups and policy checks only where a fault counts
    /// them. A plain lookup or policy check is a question, not a change.
    pub world: usize,
}

impl Fingerprint {
    /// Taken while the runtime is blocked on the probe. SQLite's shared-memory index (`*-shm`)
    /// is left out: it is rebuilt from the journal on open, not state. Files that change while
    /// being read (another task's) still change the hash, which only ever prunes less.
    pub fn take(data: &Path, world: &World, scenario: &Scenario) -> Fingerprint {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        let mut stack = vec![data.to_owned()];
        let mut files = Vec::new();
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path)
                } else if !path.to_string_lossy().ends_with("-shm") {
                    files.push(path)
                }
            }
        }
        files.sort();
        for file in files {
            file.hash(&mut hasher);
            std::fs::read(&file).unwrap_or_default().hash(&mut hasher);
        }
        let counts_lookups = !scenario.lookup_faults.is_empty();
        let counts_checks = !scenario.policy_faults.is_empty();
        // Taken at every announcement: counted in place, not on a copy of the ledger.
        let world = world.count_entries(|e| match e.event {
            fake_tool::Event::ProviderLookup { .. } => counts_lookups,
            fake_tool::Event::PolicyCheck { .. } => counts_checks,
            _ => true,
        });
        Fingerprint { data: hasher.finish(), world }
    }
}

impl Run {
    pub fn artifacts_path(&self) -> &Path {
        self.artifacts.path()
    }

    /// Keeps the data dir and logs on disk; returns where.
    pub fn keep_artifacts(self) -> PathBuf {
        self.artifacts.keep()
    }
}

struct Driver<'a> {
    scenario: &'a Scenario,
    clock: Clock,
    timeline: Vec<Mark>,
    world: &'a World,
    /// Times each (boundary, operation, destination) was announced, across incarnations: in all,
    /// and per attempt number.
    seen: HashMap<(Boundary, String, Option<String>), u32>,
    seen_attempt: HashMap<(Boundary, String, Option<String>, u32), u32>,
    hits: Vec<Hit>,
    incarnation: Incarnation,
    /// A client of the current incarnation's API.
    client: Client,
    last_kill: Option<Instant>,
    restarts: Vec<Duration>,
    recoveries: Vec<Duration>,
    /// Operations the runtime accepted, in order, and those it has since said it does not know.
    accepted: Vec<String>,
    forgotten: BTreeSet<String>,
    /// `Some(data dir)` when fingerprints are taken.
    fingerprint_data: Option<PathBuf>,
    fingerprints: Vec<(u64, Fingerprint)>,
    malformed_submissions: bool,
    /// With tracing: the tracer's link, and word of a syscall fault's point being reached.
    traced: Option<crate::run::traced::Tracing>,
    syscall_reached: Option<tokio::sync::mpsc::UnboundedReceiver<crate::run::traced::Reached>>,
    /// A syscall kill noticed where the driver could not act on it yet (a request failed because
    /// of it): acted on at the next chance.
    reached_early: Option<crate::run::traced::Reached>,
    /// Frozen (SIGSTOPped) incarnations that a newer one has outlived, with the announcement each
    /// was frozen at; resumed once the operation they were frozen in has settled.
    zombies: Vec<(Incarnation, ProbeMessage)>,
}

impl Driver<'_> {
    fn mark(&mut self, happening: Happening) {
        let seq = self.clock.tick();
        self.timeline.push(Mark { seq, at_micros: self.clock.micros(), happening });
    }

    /// The fault (index) to fire at this probe announcement, if any.
    fn fault_for(&mut self, message: &ProbeMessage) -> Option<usize> {
        let key = (message.boundary, message.operation_id.clone(), message.destination.clone());
        let count = self.seen.entry(key.clone()).or_default();
        *count += 1;
        let count = *count;
        let for_attempt = self.seen_attempt.entry((key.0, key.1, key.2, message.attempt)).or_default();
        *for_attempt += 1;
        let for_attempt = *for_attempt;
        self.scenario.faults.iter().enumerate().position(|(i, f)| {
            let nth = match f.attempt {
                None => count,
                Some(a) if a == message.attempt => for_attempt,
                Some(_) => return false,
            };
            self.hits[i] == Hit::NotReached
                && f.at.site() == Site::Probe
                && f.at == message.boundary
                && f.operation == message.operation_id
                && f.destination == message.destination
                && f.occurrence == nth
        })
    }

    fn revoke(&self, fault_index: usize) {
        for revocation in revocations(self.scenario, &self.scenario.faults[fault_index]) {
            self.world.revoke(revocation);
        }
    }

    /// Fires fault `fault_index`: its revocations, SIGKILL, a restart on the same data dir, and
    /// the checks every restart owes the client's side of the contract.
    async fn fire(&mut self, fault_index: usize, launch: &Launch<'_>) -> Result<(), String> {
        self.revoke(fault_index);
        self.kill_and_restart(launch).await?;
        self.after_restart().await;
        Ok(())
    }

    /// Whether the tracer's task killed the runtime at a syscall fault's point (the kill is its;
    /// the restart is the driver's).
    fn syscall_killed(&mut self) -> bool {
        if self.reached_early.is_none()
            && let Some(receiver) = self.syscall_reached.as_mut()
        {
            self.reached_early = receiver.try_recv().ok();
        }
        self.reached_early.is_some()
    }

    /// The runtime was killed at a syscall fault's point: mark it, restart on the same data dir,
    /// and run the restart's checks.
    async fn syscall_restart(
        &mut self,
        reached: crate::run::traced::Reached,
        launch: &Launch<'_>,
    ) -> Result<(), String> {
        let incarnation = self.incarnation.number;
        if let crate::run::traced::Target::Boundary(i) = reached.target {
            // The runtime is dead already (the tracer's task killed it): a revocation in force
            // before the restart is one in force at the kill.
            self.hits[i] = Hit::AtSyscall;
            self.revoke(i);
        }
        self.mark(Happening::SyscallKill { incarnation, point: reached.point });
        self.kill_and_restart(launch).await?;
        self.after_restart().await;
        Ok(())
    }

    /// The runtime answered `404` for an operation it had accepted (`intent_durable`).
    fn forgot(&mut self, operation: &str, answer: String) {
        let incarnation = self.incarnation.number;
        self.mark(Happening::Forgotten { operation: operation.to_owned(), incarnation, answer });
        self.forgotten.insert(operation.to_owned());
    }

    /// After every restart: is every accepted operation still known (`intent_durable`), and does
    /// the runtime answer its resubmission as the contract says (`idempotent_submission`)?
    async fn after_restart(&mut self) {
        let incarnation = self.incarnation.number;
        for id in self.accepted.clone() {
            if self.forgotten.contains(&id) {
                continue;
            }
            let read = self.client.read(&id).await;
            if self.syscall_killed() {
                return; // the next restart checks again
            }
            if let Err(ReadError::Unknown(answer)) = read {
                self.forgot(&id, answer);
                continue;
            }
            let op = self.scenario.operation(&id).expect("accepted operations are the scenario's");
            for submission in Resubmission::AGAIN {
                let answer = self.client.resubmit(op, submission).await;
                if self.syscall_killed() {
                    return;
                }
                let operation = Some(id.clone());
                self.mark(Happening::Resubmitted { operation, incarnation, submission, answer, read_after: None });
            }
        }
    }

    /// Fires a `freeze` fault: SIGSTOP instead of SIGKILL, the world told that the next
    /// incarnation is current before it starts (its fencing token), and the frozen one kept
    /// aside with its unanswered announcement.
    async fn freeze(&mut self, message: ProbeMessage, launch: &Launch<'_>) -> Result<(), String> {
        let frozen_at = Instant::now();
        self.last_kill = Some(frozen_at);
        let number = self.incarnation.number;
        self.mark(Happening::Frozen { incarnation: number, message: message.clone() });
        self.incarnation.freeze();
        self.world.fence(number + 1);
        self.mark(Happening::Started { incarnation: number + 1 });
        // On failure the frozen one is still `self.incarnation`: `run` kills and reaps it.
        let next = start(launch, number + 1, &mut self.traced).await.map_err(|e| e.to_string())?;
        let frozen = std::mem::replace(&mut self.incarnation, next);
        self.zombies.push((frozen, message));
        self.client = Client::new(&self.incarnation.api);
        self.restarts.push(frozen_at.elapsed());
        self.after_restart().await;
        Ok(())
    }

    /// Resumes every frozen incarnation, one at a time: SIGCONT, `resume` to the announcement it
    /// was frozen at (and to any it makes after), then waits for it to exit — the event a fenced
    /// incarnation owes — until the scenario's deadline, when it is recorded as outliving its
    /// fence and SIGKILLed. Reaped either way.
    async fn resume_zombies(&mut self) {
        for (mut zombie, message) in std::mem::take(&mut self.zombies) {
            let number = zombie.number;
            let started = tokio::time::Instant::now();
            let deadline = started + self.scenario.deadline;
            self.mark(Happening::Resumed { incarnation: number, message });
            zombie.thaw();
            let mut answer = zombie.probe.is_some();
            loop {
                // One answer per announcement: the one it was frozen at, then each it makes.
                if answer && let Some(probe) = zombie.probe.as_mut() {
                    // A failed write means it exited (the wait below sees it); a write that never
                    // ends means it stopped reading, and the deadline bounds it.
                    if tokio::time::timeout_at(deadline, probe.resume()).await.is_err() {
                        zombie.probe = None;
                    }
                }
                answer = false;
                tokio::select! {
                    biased;
                    status = zombie.child.wait() => {
                        let status = describe_status(status.ok());
                        self.mark(Happening::ZombieExited { incarnation: number, status });
                        break;
                    }
                    next = next_probe(&mut zombie.probe) => match next {
                        Ok(Some(message)) => {
                            self.mark(Happening::ZombieAnnounced { incarnation: number, message });
                            answer = true;
                        }
                        // Closed or unreadable: it is on its way out, or says nothing more.
                        Ok(None) | Err(_) => zombie.probe = None,
                    },
                    _ = tokio::time::sleep_until(deadline) => {
                        self.mark(Happening::ZombieOutlived { incarnation: number, waited: started.elapsed() });
                        break;
                    }
                }
            }
            // Also sweeps what it started, and reaps it.
            zombie.kill().await;
        }
    }

    async fn kill_and_restart(&mut self, launch: &Launch<'_>) -> Result<(), String> {
        let killed_at = Instant::now();
        self.last_kill = Some(killed_at);
        self.incarnation.kill().await;
        let number = self.incarnation.number;
        self.mark(Happening::Killed { incarnation: number });
        self.mark(Happening::Started { incarnation: number + 1 });
        self.incarnation = start(launch, number + 1, &mut self.traced).await.map_err(|e| e.to_string())?;
        self.client = Client::new(&self.incarnation.api);
        self.restarts.push(killed_at.elapsed());
        Ok(())
    }
}

/// Runs `scenario` against `target`. Never panics on a misbehaving runtime: whatever happens is
/// in the returned [`Run`] (`aborted`, `unsettled`, …) for the checker to report.
pub async fn run(scenario: &Scenario, target: &Target, options: &RunOptions) -> std::io::Result<Run> {
    let artifacts = Artifacts::create_in(options.artifacts_root.as_deref(), &scenario.name)?;
    let data = artifacts.path().join("data");
    let logs = artifacts.path().join("logs");
    std::fs::create_dir(&data)?;
    std::fs::create_dir(&logs)?;
    let probe_path = artifacts.path().join("probe.sock");
    let listener = if options.probe { Some(tokio::net::UnixListener::bind(&probe_path)?) } else { None };

    let clock = Clock::default();
    let (world, mut points) = World::start(clock.clone()).await?;
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

    let mut env = environment(&world, &data, &scenario.runtime);
    if options.probe {
        env.push(("KILLPOINT_PROBE_SOCKET".to_owned(), probe_path.display().to_string()));
    }
    // Traced: the tracer is the command, the runtime its argument; it announces on its own socket.
    // Where the system refuses tracing, a run that only asked for it goes on untraced (the
    // caller said so once); a scenario with syscall faults cannot run at all.
    let permitted = crate::run::traced::permitted();
    if let (Err(why), false) = (&permitted, scenario.syscall_faults.is_empty()) {
        world.shutdown().await;
        return Err(std::io::Error::other(format!("this scenario's [[syscall_fault]]s cannot be run here: {why}")));
    }
    let tracing = (options.syscalls || !scenario.syscall_faults.is_empty()) && permitted.is_ok();
    let traced_target;
    let (mut traced, syscall_reached, target) = if tracing {
        let tracer = crate::run::traced::tracer_binary().expect("permitted() found it");
        let socket = artifacts.path().join("trace.sock");
        let (traced, reached) = crate::run::traced::Tracing::new(&socket, scenario.syscall_faults.clone())?;
        env.push((crate::run::traced::SOCKET_VARIABLE.to_owned(), socket.display().to_string()));
        let mut args = vec!["--".to_owned(), target.program.display().to_string()];
        args.extend(target.args.iter().cloned());
        traced_target = Target { program: tracer, args };
        (Some(traced), Some(reached), &traced_target)
    } else {
        (None, None, target)
    };
    let launch = Launch { target, env, logs: &logs, probe: listener.as_ref(), ready_timeout: options.ready_timeout };

    let timeline =
        vec![Mark { seq: clock.tick(), at_micros: clock.micros(), happening: Happening::Started { incarnation: 1 } }];
    let first = match start(&launch, 1, &mut traced).await {
        Ok(i) => i,
        Err(e) => {
            world.shutdown().await;
            return Ok(Run {
                ledger: Vec::new(),
                timeline,
                reports: BTreeMap::new(),
                unsettled: Vec::new(),
                probe: false,
                hits: vec![Hit::NotReached; scenario.faults.len()],
                harness_failure: intact(&artifacts).err(),
                aborted: Some(e.to_string()),
                incarnations: 1,
                restarts: Vec::new(),
                recoveries: Vec::new(),
                fingerprints: Vec::new(),
                syscall_points: Vec::new(),
                syscall_hits: vec![false; scenario.syscall_faults.len()],
                metrics: None,
                artifacts,
            });
        }
    };
    let probe = first.probe.is_some();
    let tracer_reaches = traced.is_some() && !probe;
    arm(&world, scenario, probe, tracer_reaches);
    if let Some(traced) = traced.as_ref().filter(|_| tracer_reaches) {
        let at_syscalls = scenario.faults.iter().enumerate().filter(|(_, f)| by_tracer(f)).map(|(index, f)| {
            let at = Anchor { boundary: f.at, operation: f.operation.clone(), occurrence: f.occurrence };
            crate::run::traced::BoundaryFault { index, at }
        });
        traced.arm_boundaries(at_syscalls.collect());
    }
    let mut driver = Driver {
        scenario,
        clock: clock.clone(),
        timeline,
        world: &world,
        seen: HashMap::new(),
        seen_attempt: HashMap::new(),
        hits: scenario
            .faults
            .iter()
            .map(|f| {
                let reached = reachable(scenario, f, probe) || (tracer_reaches && by_tracer(f));
                if reached { Hit::NotReached } else { Hit::NeedsProbe }
            })
            .collect(),
        client: Client::new(&first.api),
        incarnation: first,
        last_kill: None,
        restarts: Vec::new(),
        recoveries: Vec::new(),
        accepted: Vec::new(),
        forgotten: BTreeSet::new(),
        fingerprint_data: options.fingerprints.then(|| data.clone()),
        fingerprints: Vec::new(),
        malformed_submissions: options.malformed_submissions,
        traced,
        syscall_reached,
        reached_early: None,
        zombies: Vec::new(),
    };

    let mut unsettled = Vec::new();
    let aborted = drive(&mut driver, &launch, &mut points, &mut unsettled).await.err();
    // A run that stopped early may still hold frozen incarnations: none is left behind.
    for (mut zombie, _) in std::mem::take(&mut driver.zombies) {
        zombie.kill().await;
    }

    // The final word of the runtime on every operation, read before it is stopped.
    let mut reports = BTreeMap::new();
    if aborted.is_none() {
        for op in &scenario.operations {
            match driver.client.read(&op.id).await {
                Ok(report) => {
                    reports.insert(op.id.clone(), report);
                }
                Err(ReadError::Unknown(answer)) => driver.forgot(&op.id, answer),
                Err(ReadError::Other(_)) => {}
            }
        }
    }
    // The monitoring signals, read after the reports: the checker compares them with the ledgers.
    let metrics = match aborted.is_none() && driver.incarnation.metrics {
        true => Some(driver.client.metrics().await),
        false => None,
    };
    // Before anything is held against the runtime: was the harness's own ground intact?
    let harness_failure = intact(&artifacts).err();
    driver.incarnation.kill().await;
    let incarnations = driver.incarnation.number;
    // Provider faults without a kill count as reached when the provider saw their call.
    let ledger = world.entries();
    let mut hits = driver.hits.clone();
    for (i, fault) in scenario.faults.iter().enumerate() {
        if fault.at == Boundary::AfterDispatch
            && fault.action != Action::Kill
            && ledger.iter().any(|e| {
                matches!(&e.event, fake_tool::Event::ProviderCall { operation: Some(op), call, .. }
                    if *op == fault.operation && *call == fault.occurrence)
            })
        {
            hits[i] = Hit::Exact;
        }
    }
    let (syscall_points, syscall_hits) = match &driver.traced {
        Some(traced) => (traced.points(), traced.hits()),
        None => (Vec::new(), Vec::new()),
    };
    let Driver { timeline, restarts, recoveries, fingerprints, .. } = driver;
    world.shutdown().await;
    Ok(Run {
        ledger,
        timeline,
        reports,
        unsettled,
        probe,
        hits,
        aborted,
        harness_failure,
        incarnations,
        restarts,
        recoveries,
        fingerprints,
        syscall_points,
        syscall_hits,
        metrics,
        artifacts,
    })
}

/// Starts incarnation `number`; when the run traces, its tracer's points are answered from the
/// start and counted from its ready line.
async fn start(
    launch: &Launch<'_>,
    number: u32,
    traced: &mut Option<crate::run::traced::Tracing>,
) -> Result<Incarnation, crate::run::incarnation::StartError> {
    if let Some(traced) = traced.as_mut() {
        traced.watch(number);
    }
    let incarnation = Incarnation::start(launch, number).await?;
    if let Some(traced) = traced {
        traced.ready();
    }
    Ok(incarnation)
}

/// Whether the run directory the harness made is still there and usable: a data dir or log
/// directory removed under the harness is the harness's failure, not the runtime's.
fn intact(artifacts: &Artifacts) -> Result<(), String> {
    let root = artifacts.path();
    for dir in [root.to_owned(), root.join("data"), root.join("logs")] {
        match std::fs::metadata(&dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(format!("the harness's run directory {} is no longer a directory", dir.display())),
            Err(e) => {
                return Err(format!(
                    "the harness's run directory {} vanished or became unusable during the run ({e}); the runtime is not judged on an incomplete record",
                    dir.display()
                ));
            }
        }
    }
    Ok(())
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
        ("KILLPOINT_DELIVERY_MAX_ATTEMPTS", settings.delivery_max_attempts.to_string()),
        ("KILLPOINT_RETRY_BASE_MS", settings.retry_base_ms.to_string()),
    ]
    .into_iter()
    .map(|(name, value)| (name.to_owned(), value))
    .collect()
}

/// Submits the workload wave by wave and waits for each wave to settle, firing faults on the way.
async fn drive(
    driver: &mut Driver<'_>,
    launch: &Launch<'_>,
    points: &mut tokio::sync::mpsc::UnboundedReceiver<fake_tool::KillPoint>,
    unsettled: &mut Vec<(String, String)>,
) -> Result<(), String> {
    let scenario = driver.scenario;
    for wave in scenario.waves() {
        for op in &wave {
            submit(driver, launch, op).await?;
        }
        settle(driver, launch, points, &wave, unsettled).await?;
        // The wave settled under the newer incarnation: now the outlived one wakes up.
        driver.resume_zombies().await;
    }
    // Once per run, when the runtime has settled everything (a stuck one would make each request
    // wait for its timeout): submissions the contract says to refuse, and nothing created by them.
    if unsettled.is_empty() && driver.forgotten.is_empty() && driver.malformed_submissions {
        malformed_submissions(driver).await;
    }
    Ok(())
}

/// Submits one operation; an `after_submit` fault fires on its `202`.
async fn submit(driver: &mut Driver<'_>, launch: &Launch<'_>, op: &Operation) -> Result<(), String> {
    let scenario = driver.scenario;
    // Marked before the request: the runtime may start work before its answer arrives.
    driver.mark(Happening::Submitted { operation: op.id.clone() });
    let mut submitted = driver.client.submit(op).await;
    // Killed at a syscall point while it handled the submission: no answer came, and a client with
    // no answer submits again (the same body), to the next incarnation.
    while driver.syscall_killed() {
        let reached = driver.reached_early.take().expect("syscall_killed said so");
        driver.syscall_restart(reached, launch).await?;
        submitted = driver.client.submit(op).await;
    }
    match submitted {
        Ok(status) => {
            driver.mark(Happening::Answered { operation: op.id.clone(), status });
            driver.accepted.push(op.id.clone());
            // `after_submit`: killed the instant the runtime said it has the operation.
            let fault = scenario.faults.iter().enumerate().position(|(i, f)| {
                f.at == Boundary::AfterSubmit && f.operation == op.id && driver.hits[i] == Hit::NotReached
            });
            if let Some(i) = fault.filter(|_| status == 202) {
                driver.hits[i] = Hit::Exact;
                let what = format!("client received 202 Accepted for {}", op.id);
                driver.mark(Happening::KillPoint { operation: op.id.clone(), what });
                driver.fire(i, launch).await?;
            }
            Ok(())
        }
        Err(e) => {
            // A failed submission is most often a runtime that died on it, and the connection
            // breaks a moment before the exit can be seen: give the exit half a second to show,
            // so that the message says which it was and shows the runtime's last words.
            let number = driver.incarnation.number;
            let what = match tokio::time::timeout(Duration::from_millis(500), driver.incarnation.child.wait()).await {
                Ok(status) => {
                    let status = describe_status(status.ok());
                    driver.mark(Happening::Exited { incarnation: number, status: status.clone() });
                    format!("incarnation {number} exited on its own ({status}) while `{}` was being submitted", op.id)
                }
                Err(_) => format!("incarnation {number} is running but did not accept `{}`", op.id),
            };
            Err(format!("{what}: {e}\n{}", tail_of_logs(launch.logs, 15)))
        }
    }
}

/// Answers the probe and fires faults until every operation of `wave` has settled (or the
/// deadline, renewed by every restart, has passed).
async fn settle(
    driver: &mut Driver<'_>,
    launch: &Launch<'_>,
    points: &mut tokio::sync::mpsc::UnboundedReceiver<fake_tool::KillPoint>,
    wave: &[&Operation],
    unsettled: &mut Vec<(String, String)>,
) -> Result<(), String> {
    let scenario = driver.scenario;
    let probe = driver.incarnation.probe.is_some();
    // Still to settle, each with the last state seen.
    let mut pending: Vec<(&Operation, String)> = wave.iter().map(|op| (*op, String::from("never read"))).collect();
    let waiting_for = |pending: &[(&Operation, String)]| {
        pending.iter().map(|(op, _)| format!("`{}`", op.id)).collect::<Vec<_>>().join(", ")
    };
    let mut deadline = tokio::time::Instant::now() + scenario.deadline;
    let mut poll = tokio::time::interval(Duration::from_millis(5));
    // After a world entry, the runtime's last commit follows within a millisecond or two: read
    // again each millisecond, a few times, before falling back to the slow tick.
    let mut follow_ups = 0u32;
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        // A runtime that says it does not know an operation it accepted will not settle it:
        // reported as soon as seen, not at the deadline.
        pending.retain(|(op, _)| !driver.forgotten.contains(&op.id));
        if pending.is_empty() {
            return Ok(());
        }
        // Checked here as well as in the last branch: `biased` polls that branch only when no
        // other is ready, and a runtime that floods the probe keeps the first one ready.
        if tokio::time::Instant::now() >= deadline {
            unsettled.extend(pending.into_iter().map(|(op, seen)| (op.id.clone(), seen)));
            return Ok(());
        }
        if driver.syscall_killed()
            && let Some(reached) = driver.reached_early.take()
        {
            driver.syscall_restart(reached, launch).await?;
            deadline = tokio::time::Instant::now() + scenario.deadline;
            continue;
        }
        let incarnation = &mut driver.incarnation;
        tokio::select! {
            biased;
            message = next_probe(&mut incarnation.probe) => {
                let message = match message {
                    Ok(Some(m)) => m,
                    // The runtime closed the probe: it is exiting; the wait branch reports it.
                    Ok(None) => {
                        incarnation.probe = None;
                        continue;
                    }
                    Err(e) => return Err(format!(
                        "incarnation {}: {e}\n{}", incarnation.number, tail_of_logs(launch.logs, 15)
                    )),
                };
                match driver.fault_for(&message) {
                    Some(i) if scenario.faults[i].action == Action::Freeze => {
                        driver.hits[i] = Hit::Exact;
                        driver.freeze(message, launch).await?;
                        deadline = tokio::time::Instant::now() + scenario.deadline;
                    }
                    Some(i) => {
                        driver.hits[i] = Hit::Exact;
                        driver.mark(Happening::Boundary { message, killed: true });
                        driver.fire(i, launch).await?;
                        deadline = tokio::time::Instant::now() + scenario.deadline;
                    }
                    None => {
                        let announced = format!("`{}` of `{}`", message.boundary, message.operation_id);
                        driver.mark(Happening::Boundary { message, killed: false });
                        if let Some(data) = &driver.fingerprint_data {
                            let seq = driver.timeline.last().map_or(0, |m| m.seq);
                            driver.fingerprints.push((seq, Fingerprint::take(data, driver.world, driver.scenario)));
                        }
                        if let Some(probe) = driver.incarnation.probe.as_mut() {
                            // A failed write means the runtime died; the wait branch reports it.
                            // A write that never ends means it stopped reading the answers (and
                            // would block the harness for ever): the deadline bounds it.
                            if tokio::time::timeout_at(deadline, probe.resume()).await.is_err() {
                                return Err(format!(
                                    "incarnation {} stopped reading the probe: the harness's answer to {announced} could not be written before {}'s deadline ({:?}) (CONTRACT.md section 7: one message, one answer, then the next)\n{}",
                                    driver.incarnation.number, waiting_for(&pending), scenario.deadline, tail_of_logs(launch.logs, 15)
                                ));
                            }
                        }
                    }
                }
            }
            Some(reached) = next_syscall(&mut driver.syscall_reached) => {
                driver.syscall_restart(reached, launch).await?;
                deadline = tokio::time::Instant::now() + scenario.deadline;
            }
            Some(point) = points.recv() => {
                let i = point.tag as usize;
                if driver.hits.get(i) == Some(&Hit::NotReached) {
                    let fault = &scenario.faults[i];
                    // Without the probe, "after the provider's success" is the moment the
                    // provider answered: the runtime may already be past it.
                    driver.hits[i] = if fault.at == Boundary::AfterProviderSuccess && !probe {
                        Hit::Approximate
                    } else {
                        Hit::Exact
                    };
                    driver.mark(Happening::KillPoint { operation: fault.operation.clone(), what: point.what });
                    driver.fire(i, launch).await?;
                    deadline = tokio::time::Instant::now() + scenario.deadline;
                }
            }
            status = incarnation.child.wait() => {
                let number = incarnation.number;
                let status = describe_status(status.ok());
                driver.mark(Happening::Exited { incarnation: number, status: status.clone() });
                let states: Vec<String> = pending.iter().map(|(op, seen)| format!("`{}` was {seen}", op.id)).collect();
                return Err(format!(
                    "incarnation {number} exited on its own ({status}) while {}\n{}",
                    states.join(", "), tail_of_logs(launch.logs, 15)
                ));
            }
            // Settling shows in the fake world's ledger (a call, a receipt) a moment before the
            // runtime's last commit: read at each entry, and on a slow tick for what the world
            // cannot see (an ACK written after the consumer's answer).
            _ = driver.world.changed() => {
                read_pending(driver, &mut pending).await;
                follow_ups = 4;
            }
            _ = tokio::time::sleep(Duration::from_millis(1)), if follow_ups > 0 => {
                follow_ups -= 1;
                read_pending(driver, &mut pending).await;
            }
            _ = poll.tick() => read_pending(driver, &mut pending).await,
            _ = tokio::time::sleep_until(deadline) => {
                unsettled.extend(pending.into_iter().map(|(op, seen)| (op.id.clone(), seen)));
                return Ok(());
            }
        }
    }
}

/// Reads every operation still pending and drops those that have settled.
async fn read_pending(driver: &mut Driver<'_>, pending: &mut Vec<(&Operation, String)>) {
    let mut index = 0;
    while index < pending.len() {
        let op = pending[index].0;
        match driver.client.read(&op.id).await {
            Ok(report) if report.is_settled(&op.destinations) => {
                pending.remove(index);
                continue;
            }
            Ok(report) => pending[index].1 = report.summary(),
            Err(ReadError::Unknown(answer)) => driver.forgot(&op.id, answer),
            Err(e) => pending[index].1 = format!("unreadable: {e}"),
        }
        index += 1;
    }
    if pending.is_empty()
        && let Some(killed_at) = driver.last_kill.take()
    {
        driver.recoveries.push(killed_at.elapsed());
    }
}

async fn malformed_submissions(driver: &mut Driver<'_>) {
    let incarnation = driver.incarnation.number;
    let op = &driver.scenario.operations[0];
    for submission in Resubmission::MALFORMED {
        let answer = driver.client.resubmit(op, submission).await;
        let read_after = match submission.malformed_id() {
            Some(id) => Some(driver.client.read_answer(id).await),
            None => None,
        };
        driver.mark(Happening::Resubmitted { operation: None, incarnation, submission, answer, read_after });
    }
}

async fn next_syscall(
    reached: &mut Option<tokio::sync::mpsc::UnboundedReceiver<crate::run::traced::Reached>>,
) -> Option<crate::run::traced::Reached> {
    match reached {
        Some(r) => r.recv().await,
        None => std::future::pending().await,
    }
}

async fn next_probe(probe: &mut Option<crate::run::probe::ProbeConnection>) -> Result<Option<ProbeMessage>, String> {
    match probe {
        Some(p) => p.next().await,
        None => std::future::pending().await,
    }
}

/// Whether, without the probe, `killpoint-tracer` fires this fault: a kill at a boundary it
/// reaches exactly at a system call, not narrowed to an attempt (the tracer counts occurrences,
/// not the runtime's attempt numbers).
fn by_tracer(fault: &crate::scenario::Fault) -> bool {
    fault.at.at_syscall() && fault.action == Action::Kill && fault.attempt.is_none()
}

/// Whether a fault can be reached at all with or without the probe (CONTRACT.md section 7).
fn reachable(scenario: &Scenario, fault: &crate::scenario::Fault, probe: bool) -> bool {
    // Without the probe, `after_provider_success` is seen from outside as the provider's answer
    // to call `occurrence`. A fault at `after_dispatch` on the same operation spoils that view:
    // it takes a call whose answer is no success (the approximate kill fired on it and pre-empted
    // the exact one), and after it a lookup may find the effect without any call. No outside
    // point stands for the boundary then: it is not exercised, never "not reached".
    if fault.at == Boundary::AfterProviderSuccess
        && !probe
        && scenario.faults.iter().any(|g| g.at == Boundary::AfterDispatch && g.operation == fault.operation)
    {
        return false;
    }
    // Only the probe holds a runtime still at the boundary to freeze it there.
    if fault.action == Action::Freeze {
        return probe;
    }
    match fault.at {
        // The harness is the client: it sees the answer whether or not the runtime has a probe.
        Boundary::AfterSubmit | Boundary::AfterDispatch => true,
        Boundary::AfterProviderSuccess | Boundary::AfterDeliverySend => probe || fault.attempt.is_none(),
        Boundary::BeforeDispatch | Boundary::AfterResultWrite | Boundary::AfterPolicyRevocation => probe,
    }
}

/// The permissions `fault` withdraws, for its operation's tenant (every actor).
fn revocations(scenario: &Scenario, fault: &crate::scenario::Fault) -> Vec<Revocation> {
    let op = scenario.operation(&fault.operation).expect("validated when the scenario was read");
    fault
        .revoke
        .iter()
        .map(|r| {
            let subject = match r {
                Revoke::Tool => Subject::Tool(op.tool.tool_name().to_owned()),
                Revoke::Destination(d) => Subject::Destination(d.clone()),
                Revoke::Operation => Subject::Operation(op.id.clone()),
            };
            Revocation { tenant: op.tenant.clone(), actor: None, subject }
        })
        .collect()
}

/// Arms the fake world for the faults it stops the runtime at (tagged with the fault's index):
/// `after_dispatch` always; without the probe, also the outside views of
/// `after_provider_success` and `after_delivery_send`.
fn arm(world: &World, scenario: &Scenario, probe: bool, tracer_reaches: bool) {
    for (i, fault) in scenario.faults.iter().enumerate() {
        let tag = i as u64;
        match fault.at {
            Boundary::AfterDispatch => world.arm_provider(ProviderFault {
                operation: fault.operation.clone(),
                call: fault.occurrence,
                effect: fault.effect,
                response: match fault.action {
                    // A freeze is refused at `after_dispatch` when the scenario is read.
                    Action::Kill | Action::Freeze => FaultResponse::Hold,
                    Action::Fail => FaultResponse::Status(fault.status.unwrap_or(503)),
                    Action::Reject => FaultResponse::Reject(fault.status.unwrap_or(422)),
                    Action::Drop => FaultResponse::Drop,
                    Action::Cut => FaultResponse::Cut,
                    Action::Garbage => FaultResponse::Garbage,
                    Action::NoRef => FaultResponse::NoRef,
                    Action::Delay => FaultResponse::Delay(fault.delay_ms),
                },
                tag,
                // A kill's revocations are the driver's, put in force when it kills (`revoke`);
                // any other action's are the provider's, when it receives the call: once either way.
                revocations: if fault.action == Action::Kill { Vec::new() } else { revocations(scenario, fault) },
            }),
            Boundary::AfterProviderSuccess
                if !probe && !(tracer_reaches && by_tracer(fault)) && reachable(scenario, fault, probe) =>
            {
                world.arm_provider(ProviderFault {
                    operation: fault.operation.clone(),
                    call: fault.occurrence,
                    effect: true,
                    response: FaultResponse::AnswerAndSignal,
                    tag,
                    revocations: Vec::new(),
                })
            }
            Boundary::AfterDeliverySend if !probe && reachable(scenario, fault, probe) => {
                world.arm_consumer_hold(ConsumerHold {
                    operation: fault.operation.clone(),
                    destination: fault.destination.clone().expect("validated: delivery faults name a destination"),
                    receipt: fault.occurrence,
                    tag,
                })
            }
            _ => {}
        }
    }
}
