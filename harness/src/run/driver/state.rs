//! The driver's state across one run, and the few things every step of it uses: marking a
//! happening on the world's clock, noting an operation the runtime forgot, and the next event of
//! a source that may be absent.

use super::fingerprint::Fingerprint;
use super::options::RunOptions;
use super::record::{Happening, Hit, Mark};
use super::setup::{Ground, Tracer};
use crate::model::boundary::Boundary;
use crate::run::client::{Client, OperationReport, ReadError};
use crate::run::held::Held;
use crate::run::incarnation::Incarnation;
use crate::run::probe::{ProbeConnection, ProbeMessage};
use crate::run::traced::{Reached, Tracing};
use crate::scenario::{Operation, Scenario};
use fake_tool::{Clock, World};
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tokio::sync::mpsc::UnboundedReceiver;

/// Where a freeze held its incarnation: at a boundary (the probe's announcement, or as the tracer
/// reached it), or at a `[[syscall_fault]]`'s point.
pub(super) enum Frozen {
    Boundary(ProbeMessage),
    Syscall(Box<crate::run::traced::SyscallPoint>),
}

pub(super) struct Zombie {
    pub(super) incarnation: Incarnation,
    /// `None` for a `[[syscall_fault]]` freeze, at no boundary.
    pub(super) message: Option<ProbeMessage>,
    pub(super) held: Option<Held>,
}

/// The driver: the state its steps share, from the first incarnation's start to the record.
pub(super) struct Driver<'a> {
    pub(super) scenario: &'a Scenario,
    pub(super) clock: Clock,
    pub(super) timeline: Vec<Mark>,
    pub(super) world: &'a World,
    /// Times each (boundary, operation, destination) was announced, across incarnations: in all,
    /// and per attempt number.
    pub(super) seen: HashMap<(Boundary, String, Option<String>), u32>,
    pub(super) seen_attempt: HashMap<(Boundary, String, Option<String>, u32), u32>,
    pub(super) hits: Vec<Hit>,
    /// Where on the run's clock each fault's kill came, by fault index (`Run::killed`).
    pub(super) killed: Vec<Option<u64>>,
    pub(super) incarnation: Incarnation,
    /// A client of the current incarnation's API.
    pub(super) client: Client,
    pub(super) last_kill: Option<Instant>,
    pub(super) restarts: Vec<Duration>,
    pub(super) recoveries: Vec<Duration>,
    /// Operations the runtime accepted, in order, and those it has since said it does not know.
    pub(super) accepted: Vec<String>,
    pub(super) forgotten: BTreeSet<String>,
    /// `Some(data dir)` when fingerprints are taken.
    pub(super) fingerprint_data: Option<PathBuf>,
    pub(super) fingerprints: Vec<(u64, Fingerprint)>,
    pub(super) malformed_submissions: bool,
    pub(super) crash: crate::model::crash::Crash,
    /// With tracing: the tracer's link, and word of a syscall fault's point being reached.
    pub(super) traced: Option<Tracing>,
    pub(super) syscall_reached: Option<UnboundedReceiver<Reached>>,
    /// A syscall kill noticed where the driver could not act on it yet (a request failed because
    /// of it): acted on at the next chance.
    pub(super) reached_early: Option<Reached>,
    /// Frozen incarnations that a newer one has outlived, with the announcement each was frozen
    /// at; resumed once the operation they were frozen in has settled.
    pub(super) zombies: Vec<Zombie>,
    /// When each operation's submission was accepted: its settle deadline counts from then (or
    /// from a later ready line).
    pub(super) submitted: HashMap<String, tokio::time::Instant>,
    /// The latest answer the runtime gave to a read of each operation, in words, whichever step
    /// read it: what an unsettled operation was "last seen" as.
    pub(super) last_seen: HashMap<String, String>,
    /// A restart's incarnation did not become ready: the error the run stops on is that one.
    pub(super) unready: bool,
    /// In a run that builds crash states: the timeline, shared with the capture (`resume`).
    pub(super) mirror: Option<std::sync::Arc<crate::run::built::marks::SharedMarks>>,
    /// The run's services, started before the first incarnation (none by default).
    pub(super) services: crate::run::services::Running,
    /// Whether each `[[service_fault]]` fired, by index into `scenario.service_faults`.
    pub(super) service_hits: Vec<bool>,
    /// The service faults' windows still open (a freeze, an unreachable), and word of their ends.
    pub(super) windows: super::windows::Windows,
    /// In restore mode: how far back each kill's backup is, and where the new hosts' dirs go.
    pub(super) restores: Option<(crate::model::crash::Lag, PathBuf)>,
    /// Since the first restore: the host the runtime lives on now.
    pub(super) host: Option<super::host::Host>,
    /// With `RunOptions::keep_kills` (a process crash, no services): the data dir and logs the
    /// crash state after each kill is taken from, and the last one taken.
    pub(super) keep_kills: Option<(PathBuf, PathBuf, std::time::Duration)>,
    pub(super) after_kill: Option<Result<crate::run::built::after_kill::AfterKill, String>>,
    /// `RunOptions::untraced_after_last_kill`, in a traced process crash: the runtime as the user
    /// gave it, started without the tracer once every kill has happened (`restart`).
    pub(super) untraced_target: Option<crate::run::incarnation::Target>,
}

impl<'a> Driver<'a> {
    /// The driver of a run whose first incarnation is up and whose faults are armed (`hits`).
    pub(super) fn new(
        scenario: &'a Scenario,
        ground: &'a Ground,
        options: &RunOptions,
        timeline: Vec<Mark>,
        hits: Vec<Hit>,
        first: Incarnation,
        tracer: Tracer,
    ) -> Driver<'a> {
        Driver {
            scenario,
            clock: ground.clock.clone(),
            timeline,
            world: &ground.world,
            seen: HashMap::new(),
            seen_attempt: HashMap::new(),
            killed: vec![None; hits.len()],
            hits,
            client: Client::new(&first.api),
            incarnation: first,
            last_kill: None,
            restarts: Vec::new(),
            recoveries: Vec::new(),
            accepted: Vec::new(),
            forgotten: BTreeSet::new(),
            crash: options.crash,
            // A fingerprint hashes what a process kill leaves; a power loss leaves what was synced,
            // which it does not see: machine crashes are not pruned by it.
            // Nor does it see a service's state: with services, no fingerprints (nothing pruned).
            fingerprint_data: (options.fingerprints
                && options.crash == crate::model::crash::Crash::Process
                && options.services.is_empty())
            .then(|| ground.data.clone()),
            fingerprints: Vec::new(),
            malformed_submissions: options.malformed_submissions,
            traced: tracer.tracing,
            syscall_reached: tracer.reached,
            reached_early: None,
            zombies: Vec::new(),
            submitted: HashMap::new(),
            last_seen: HashMap::new(),
            unready: false,
            mirror: None,
            services: crate::run::services::Running::default(),
            service_hits: vec![false; scenario.service_faults.len()],
            keep_kills: (options.keep_kills
                && options.crash == crate::model::crash::Crash::Process
                && options.services.is_empty())
            .then(|| (ground.data.clone(), ground.logs.clone(), options.kill_lands)),
            after_kill: None,
            untraced_target: None,
            windows: Default::default(),
            restores: (options.crash == crate::model::crash::Crash::Restore).then(|| {
                let lag = options.restore_lag.or(scenario.restore_lag).unwrap_or(crate::model::crash::Lag::DEFAULT);
                (lag, ground.data.parent().map(PathBuf::from).unwrap_or_default())
            }),
            host: None,
        }
    }
}

impl Driver<'_> {
    pub(super) fn mark(&mut self, happening: Happening) {
        // A window that ended on its own was marked on the clock then: in its place first.
        self.take_window_ends();
        // Ticked under the shared timeline's lock: a capture that reads the clock under it finds
        // every mark numbered up to then.
        let shared = self.mirror.as_ref().map(|m| m.lock());
        let seq = self.clock.tick();
        let mark = Mark { seq, at_micros: self.clock.micros(), happening };
        if let Some(mut shared) = shared {
            shared.push(mark.clone());
        }
        self.timeline.push(mark);
        if let Some(mirror) = &self.mirror {
            mirror.added();
        }
    }

    /// Talks to the current incarnation's API from now on (and tells a capture which it is).
    pub(super) fn connect(&mut self) {
        self.client = Client::new(&self.incarnation.api);
        self.tell_capture_the_api();
    }

    /// A capture's check that no answer is on its way watches the current incarnation's API.
    pub(super) fn tell_capture_the_api(&self) {
        if let Some(mirror) = &self.mirror {
            mirror.serving(&self.incarnation.api);
        }
    }

    /// Under a controlled schedule: the harness's turn (`run::traced::turn`), which the driver
    /// tells what it does so its requests land at the same place in the order every run.
    pub(super) fn turn(&self) -> Option<&std::sync::Arc<crate::run::traced::Turn>> {
        self.traced.as_ref().and_then(Tracing::turn)
    }

    /// Before a request that may change what the runtime does next (a submission, a submission
    /// again): under a controlled schedule, waits until it can land at a settled point; no call
    /// goes then until the runtime has read it and the driver has its answer
    /// ([`Driver::answered_in_turn`]). Sent outside the turn, a resubmission landed wherever the
    /// runtime's recovery had got to, and runs of one seed parted there.
    pub(super) async fn sending_in_turn(&self) {
        if let Some(turn) = self.turn() {
            turn.submitting(crate::run::incarnation::api_port(&self.incarnation.api)).await;
        }
    }

    /// The answer is in: the driver acts on it before any call goes.
    pub(super) fn answered_in_turn(&self) {
        if let Some(turn) = self.turn() {
            turn.answered();
        }
    }

    /// The driver waits on the runtime again: calls go.
    pub(super) fn waiting_in_turn(&self) {
        if let Some(turn) = self.turn() {
            turn.waiting();
        }
    }

    /// The runtime answered `404` for an operation it had accepted (`intent_durable`).
    pub(super) fn forgot(&mut self, operation: &str, answer: String) {
        let incarnation = self.incarnation.number;
        self.mark(Happening::Forgotten { operation: operation.to_owned(), incarnation, answer });
        self.forgotten.insert(operation.to_owned());
    }
}

impl Driver<'_> {
    /// Reads `op` from the current incarnation, keeping the answer as its last seen state —
    /// unless a syscall kill cut the read off (then it is the kill's answer, not the runtime's).
    pub(super) async fn read(&mut self, op: &Operation) -> Result<OperationReport, ReadError> {
        let read = unless_reached(&mut self.syscall_reached, &mut self.reached_early, self.client.read(&op.id))
            .await
            .unwrap_or_else(|| Err(ReadError::Other("cut off: the tracer reached a fault's point first".into())));
        if !self.syscall_killed() {
            let seen = match &read {
                Ok(report) => report.summary(),
                Err(ReadError::Unknown(answer)) => format!("unknown: {answer}"),
                Err(ReadError::Other(e)) => format!("unreadable: {e}"),
            };
            self.last_seen.insert(op.id.clone(), seen);
        }
        read
    }

    /// What `op` was last seen as; `never read` before its first answer.
    pub(super) fn seen(&self, op: &str) -> String {
        self.last_seen.get(op).cloned().unwrap_or_else(|| "never read".to_owned())
    }

    /// `op`'s settle deadline on the incarnation now running (see [`super::deadline`]).
    pub(super) fn deadline_of(&self, op: &str) -> tokio::time::Instant {
        let ready = self.incarnation.ready_at;
        let submitted = self.submitted.get(op).copied().unwrap_or(ready);
        let allowed = super::deadline::allowed(self.scenario.deadline, self.traced.is_some());
        super::deadline::deadline(submitted, ready, self.incarnation.start_up, allowed)
    }
}

/// `request` (one of the harness's requests to the runtime), unless the tracer's task reaches a
/// fault's point first: then `None`, the point kept in `early` for the caller's `syscall_killed`.
/// A kill would cut the request off anyway, but a runtime frozen at the point (held by its
/// tracer, every thread's next traced call waiting with it) may never answer: the request would
/// have waited out the client's 5 s timeout before the freeze was even marked.
pub(super) async fn unless_reached<T>(
    reached: &mut Option<UnboundedReceiver<Reached>>,
    early: &mut Option<Reached>,
    request: impl std::future::Future<Output = T>,
) -> Option<T> {
    if early.is_some() {
        return None;
    }
    tokio::select! {
        biased;
        answer = request => Some(answer),
        Some(point) = next_syscall(reached) => {
            *early = Some(point);
            None
        }
    }
}

/// The next word of the tracer's task about a syscall fault's point; never, without tracing.
pub(super) async fn next_syscall(reached: &mut Option<UnboundedReceiver<Reached>>) -> Option<Reached> {
    match reached {
        Some(r) => r.recv().await,
        None => std::future::pending().await,
    }
}

/// The next probe announcement; never, without a probe connection.
pub(super) async fn next_probe(probe: &mut Option<ProbeConnection>) -> Result<Option<ProbeMessage>, String> {
    match probe {
        Some(p) => p.next().await,
        None => std::future::pending().await,
    }
}
